package access

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// legacyKeysFile is the JSON registry of kwdata before accounts moved into
// the account database: <Dir>/keys.json, rewritten whole on every change.
type legacyKeysFile struct {
	Version int `json:"version"`
	Keys    []struct {
		ID        string    `json:"id"`
		SHA256    string    `json:"sha256"`
		Tier      Tier      `json:"tier"`
		Email     string    `json:"email,omitempty"`
		Created   time.Time `json:"created"`
		PaidUntil time.Time `json:"paid_until,omitzero"`
		Revoked   time.Time `json:"revoked,omitzero"`
	} `json:"keys"`
}

// migratedSuffix is appended to keys.json once it is imported: the file
// stays as a backup, and its new name keeps it from being imported twice.
const migratedSuffix = ".migrated"

// migrate imports <Dir>/keys.json into a database that has never imported
// one, in one synced batch, then renames it. A damaged file stops the
// open with the reason and changes nothing, so no key is lost silently.
func (k *Keys) migrate() error {
	path := filepath.Join(k.dir, keysFileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read key registry %s to import it: %w", path, err)
	}
	if _, done, err := k.getString(migratedKey); err != nil {
		return fmt.Errorf("cannot read account database: %w", err)
	} else if done {
		// Imported before, and the rename did not happen (a crash
		// between the two): the database already holds these keys.
		return k.retire(path)
	}
	var f legacyKeysFile
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("cannot import key registry %s: %w; repair or remove it and start again", path, err)
	}
	if f.Version != 1 {
		return fmt.Errorf("cannot import key registry %s: version %d, this kwdata reads version 1", path, f.Version)
	}
	seen := map[keyHash]bool{}
	imported := 0
	err = k.update(context.Background(), func(t *txn) error {
		for _, e := range f.Keys {
			var h keyHash
			if b, err := hex.DecodeString(e.SHA256); err != nil || len(b) != len(h) {
				return fmt.Errorf("cannot import key registry %s: key %s has a malformed sha256", path, e.ID)
			} else {
				copy(h[:], b)
			}
			if seen[h] {
				return fmt.Errorf("cannot import key registry %s: key %s duplicates the hash of another key", path, e.ID)
			}
			seen[h] = true
			k.seq++
			sk := storedKey{ID: e.ID, Seq: k.seq, Tier: e.Tier, Email: e.Email, Created: e.Created, PaidUntil: e.PaidUntil, Revoked: e.Revoked}
			if sk.Email != "" && sk.Revoked.IsZero() {
				// The JSON registry compared whole addresses, so two
				// active keys may share a mailbox; the first keeps it.
				mb := FoldEmail(sk.Email)
				if _, taken, err := t.activeOf(mb); err != nil {
					return err
				} else if !taken {
					if err := t.kv.set(emailPrefix+mb, []byte(sk.ID)); err != nil {
						return err
					}
				}
			}
			if err := t.put(h, sk); err != nil {
				return err
			}
			imported++
		}
		return t.kv.set(migratedKey, []byte(t.now.Format(time.RFC3339)))
	})
	if err != nil {
		return err
	}
	k.log.Info("imported the key registry into the account database", "from", path, "keys", imported)
	return k.retire(path)
}

// retire renames an imported keys.json out of the way.
func (k *Keys) retire(path string) error {
	if err := os.Rename(path, path+migratedSuffix); err != nil {
		return fmt.Errorf("cannot rename the imported key registry %s: %w", path, err)
	}
	return nil
}
