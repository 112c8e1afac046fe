package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/kwdata/kwdata/serve/web"
)

// handleRegister answers POST /v1/register: a one-time code mailed to the
// address, and 202 whether or not the address holds a key, so that the
// answer tells no one who is registered.
func (s *API) handleRegister(w http.ResponseWriter, r *http.Request) error {
	if s.Registrar == nil {
		return s.NoRegistrar()
	}
	var req web.RegisterRequest
	if err := web.DecodeJSONBody(r, &req, `{"email": "you@example.com"}`); err != nil {
		return err
	}
	email, err := web.CheckEmail(req.Email)
	if err != nil {
		return err
	}
	if email, err = s.SendCode(r, email); err != nil {
		return err
	}
	return web.WriteJSON(w, http.StatusAccepted, web.CodeSentResponse{
		Status: "code_sent", Email: email, ExpiresIn: int64(web.CodeTTL / time.Second),
		Next: `POST /v1/register/verify {"email": "` + email + `", "code": "the 8 digits from the mail"}`,
	})
}

// handleRegisterVerify answers POST /v1/register/verify: the key, once.
func (s *API) handleRegisterVerify(w http.ResponseWriter, r *http.Request) error {
	if s.Registrar == nil {
		return s.NoRegistrar()
	}
	var req web.VerifyRequest
	if err := web.DecodeJSONBody(r, &req, `{"email": "you@example.com", "code": "12345678"}`); err != nil {
		return err
	}
	email, err := web.CheckEmail(req.Email)
	if err != nil {
		return err
	}
	code := strings.TrimSpace(req.Code)
	if code == "" || len(code) > 16 {
		return web.RegisterError(web.ErrCodeInvalid)
	}
	key, err := s.Registrar.VerifySignup(r.Context(), email, code)
	if err != nil {
		return web.RegisterError(err)
	}
	return web.WriteKey(w, key, "registered")
}

// handleRotate answers POST /v1/keys/rotate: a new key for the account of
// the key the request carries, which stops working.
func (s *API) handleRotate(w http.ResponseWriter, r *http.Request) error {
	if s.Registrar == nil {
		return s.NoRegistrar()
	}
	key := web.RequestKey(r)
	if key == "" {
		return web.HTTPError{Status: http.StatusUnauthorized, Code: web.CodeInvalidKey,
			Msg: "Send the key to rotate as Authorization: Bearer <key>."}
	}
	fresh, err := s.Registrar.RotateKey(r.Context(), key)
	if err != nil {
		return web.RegisterError(err)
	}
	s.Log.Info("key rotated")
	return web.WriteKey(w, fresh, "")
}
