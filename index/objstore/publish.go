package objstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/kwdata/kwdata/index"
	"github.com/kwdata/kwdata/kw"
	"golang.org/x/sync/errgroup"
)

// FileList is files.json: every file of a build with its size and
// SHA-256, so that a server can check each download against what was
// published. It holds the build's manifest.json too.
type FileList struct {
	BuildID string `json:"build_id"`
	Files   []File `json:"files"`
}

// File is one file of a build.
type File struct {
	// Name is the file's slash-separated path inside the build folder
	// ("manifest.json", "db/000005.sst").
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // lower-case hex
}

// maxFileList bounds what a server reads of files.json: a build has tens
// of files, each a line of JSON.
const maxFileList = 4 << 20

// maxFiles bounds the files of a build a server accepts.
const maxFiles = 100_000

// check reports the first problem of a file list that came from the
// store: it must name build id, hold manifest.json, and each name must be
// a clean relative path that stays inside the build folder.
func (l *FileList) check(id string) error {
	if l.BuildID != id {
		return fmt.Errorf("files.json names build %q, not %q", l.BuildID, id)
	}
	if len(l.Files) == 0 || len(l.Files) > maxFiles {
		return fmt.Errorf("files.json lists %d files; a build has 1 to %d", len(l.Files), maxFiles)
	}
	seen := make(map[string]bool, len(l.Files))
	manifest := false
	for _, f := range l.Files {
		if !validName(f.Name) {
			return fmt.Errorf("files.json lists %q, not a relative path inside the build", f.Name)
		}
		if seen[f.Name] {
			return fmt.Errorf("files.json lists %q twice", f.Name)
		}
		seen[f.Name] = true
		if f.Size < 0 {
			return fmt.Errorf("files.json gives %s a size of %d", f.Name, f.Size)
		}
		if b, err := hex.DecodeString(f.SHA256); err != nil || len(b) != sha256.Size {
			return fmt.Errorf("files.json gives %s the checksum %q, not a SHA-256 in hex", f.Name, f.SHA256)
		}
		if f.Name == "manifest.json" {
			manifest = true
		}
	}
	if !manifest {
		return fmt.Errorf("files.json of build %s lists no manifest.json", id)
	}
	return nil
}

// validName reports whether a name from files.json is a clean relative
// path of at most a few segments, none hidden or climbing out.
func validName(name string) bool {
	if name == "" || len(name) > 512 || strings.ContainsAny(name, "\\\x00") || path.Clean(name) != name || path.IsAbs(name) {
		return false
	}
	segs := strings.Split(name, "/")
	if len(segs) > 4 {
		return false
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || strings.HasPrefix(s, ".") {
			return false
		}
	}
	return true
}

// Published says what Publish uploaded.
type Published struct {
	BuildID string
	Files   int
	Bytes   int64
	Elapsed time.Duration
}

// Publish uploads the complete local build id of the data folder: every
// file, then files.json with the checksum of each, then CURRENT, last, so
// that the build is published only once all of it is in the store. A
// failure before CURRENT leaves the published build as it was; the
// partial upload is overwritten by the next Publish of the same id.
func (c *Client) Publish(ctx context.Context, data, id string) (Published, error) {
	start := time.Now()
	p := Published{BuildID: id}
	if _, err := index.ReadManifest(data, id); err != nil {
		return p, fmt.Errorf("cannot publish build %s: %w", id, err)
	}
	list, err := c.upload(ctx, filepath.Join(kw.IndexDir(data), id), id)
	if err != nil {
		return p, err
	}
	if err := c.putPointer(ctx, id); err != nil {
		return p, err
	}
	p.Files = len(list.Files)
	for _, f := range list.Files {
		p.Bytes += f.Size
	}
	p.Elapsed = time.Since(start)
	return p, nil
}

// upload puts every file of the build folder dir and then its files.json,
// and returns the list. CURRENT is not touched.
func (c *Client) upload(ctx context.Context, dir, id string) (*FileList, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot list the files of build %s: %w", dir, err)
	}
	slices.Sort(names)
	list := &FileList{BuildID: id, Files: make([]File, len(names))}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(c.workers)
	for i, name := range names {
		g.Go(func() error {
			f, err := c.uploadFile(gctx, filepath.Join(dir, filepath.FromSlash(name)), c.loc.key(buildsDir, id, name))
			f.Name = name
			list.Files[i] = f
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("cannot upload build %s to %s: %w", id, c.loc, err)
	}
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := c.put(ctx, c.loc.key(buildsDir, id, filesObject), bytes.NewReader(b), int64(len(b))); err != nil {
		return nil, fmt.Errorf("cannot upload the file list of build %s: %w", id, err)
	}
	return list, nil
}

// uploadFile hashes the file at name, then uploads it: the checksum is of
// the bytes read, and a file that changes meanwhile fails on its size.
func (c *Client) uploadFile(ctx context.Context, name, key string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return File{}, fmt.Errorf("cannot open %s: %w", name, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return File{}, fmt.Errorf("cannot read %s: %w", name, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return File{}, fmt.Errorf("cannot read %s: %w", name, err)
	}
	out := File{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
	if err := c.put(ctx, key, io.NewSectionReader(f, 0, n), n); err != nil {
		return out, fmt.Errorf("cannot upload %s: %w", name, err)
	}
	return out, nil
}

func (c *Client) put(ctx context.Context, key string, body io.ReadSeeker, size int64) error {
	req := c.start(ctx)
	defer req.end()
	_, err := c.s3.PutObject(req.ctx, &s3.PutObjectInput{
		Bucket: aws.String(c.loc.Bucket), Key: aws.String(key), Body: req.readSeeker(body), ContentLength: aws.Int64(size),
	})
	return req.err(err)
}

// putPointer replaces CURRENT: one small PUT, which S3 makes visible
// whole or not at all.
func (c *Client) putPointer(ctx context.Context, id string) error {
	b := []byte(id + "\n")
	if err := c.put(ctx, c.loc.key(pointerObject), bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("cannot point %s/CURRENT at build %s: %w", c.loc, id, err)
	}
	return nil
}
