package fleet

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/skillhost/skillhost/internal/fileio"
	"github.com/skillhost/skillhost/pkg/manifest"
)

// The artifact's types. A skill version is one OCI artifact (image
// manifest v1.1) with one layer: a tar of the version folder. One layer
// rather than one per file keeps the unpacking one step (every file or
// none), and a version is small enough that sharing layers between
// versions would save little.
const (
	ArtifactType   = "application/vnd.skillhost.skill.v1"
	LayerMediaType = "application/vnd.skillhost.skill.layer.v1.tar"
)

// MaxArtifactBytes bounds the layer a host accepts (512 MiB): the size is
// checked from the manifest before anything is fetched.
const MaxArtifactBytes = 512 << 20

// ArtifactsConfig says where the fleet's artifacts live.
type ArtifactsConfig struct {
	// Registry is host[:port]; Repository the repository in it.
	Registry, Repository string
	// PlainHTTP talks HTTP instead of HTTPS (oci+http://, for a registry
	// on loopback).
	PlainHTTP bool
	// Username with PasswordFile (mode 0600) authenticate to the
	// registry; CAFile replaces the system roots for its TLS.
	Username, PasswordFile, CAFile string
}

// ParseArtifactsURL reads --artifacts oci://host[:port]/repo (oci+http://
// for a registry without TLS).
func ParseArtifactsURL(s string) (ArtifactsConfig, error) {
	u, err := url.Parse(s)
	if err != nil {
		return ArtifactsConfig{}, fmt.Errorf("artifacts URL: %w", err)
	}
	var c ArtifactsConfig
	switch u.Scheme {
	case "oci":
	case "oci+http":
		c.PlainHTTP = true
	default:
		return ArtifactsConfig{}, fmt.Errorf("artifacts URL %q: scheme must be oci:// or oci+http://", s)
	}
	if u.User != nil {
		return ArtifactsConfig{}, errors.New("artifacts URL: credentials may not stand in the URL; use --registry-user and --registry-password-file")
	}
	c.Registry, c.Repository = u.Host, strings.Trim(u.Path, "/")
	if c.Registry == "" || c.Repository == "" {
		return ArtifactsConfig{}, fmt.Errorf("artifacts URL %q: want oci://host/repository", s)
	}
	return c, nil
}

// Open connects to the configured repository (no request is made).
func (c ArtifactsConfig) Open() (*remote.Repository, error) {
	repo, err := remote.NewRepository(c.Registry + "/" + c.Repository)
	if err != nil {
		return nil, fmt.Errorf("artifacts: %w", err)
	}
	repo.PlainHTTP = c.PlainHTTP
	hc := &http.Client{Transport: retry.NewTransport(http.DefaultTransport)}
	if c.CAFile != "" {
		t, err := tlsConfig(c.CAFile, "", "")
		if err != nil {
			return nil, fmt.Errorf("artifacts TLS: %w", err)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = t
		hc.Transport = retry.NewTransport(tr)
	}
	client := &auth.Client{Client: hc, Cache: auth.NewCache()}
	if c.PasswordFile != "" {
		p, err := fileio.ReadSecret(c.PasswordFile, "registry password file")
		if err != nil {
			return nil, err
		}
		client.Credential = auth.StaticCredential(c.Registry, auth.Credential{Username: c.Username, Password: p})
	}
	repo.Client = client
	return repo, nil
}

// Desired is what `host push` records per skill at <prefix>/desired/<skill>:
// the version every host should have, by the digest of its artifact.
type Desired struct {
	Version string    `json:"version"`
	Digest  string    `json:"digest"`
	Pushed  time.Time `json:"pushed"`
	// Previous is what was desired before this push: where a failed
	// rollout goes back to.
	Previous *Desired `json:"previous,omitempty"`
	// RolledBack, set on a record a failed rollout wrote, says which
	// version failed, on which host and why.
	RolledBack string `json:"rolled_back,omitempty"`
}

func desiredPrefix(prefix string) string { return strings.TrimSuffix(prefix, "/") + "/desired/" }

// Pack makes the layer of a version folder: a tar of its regular files and
// folders, sorted, with zero times and owners, so the same folder always
// packs to the same digest. A symlink or other special file is refused.
func Pack(dir string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		switch {
		case fi.IsDir():
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			return tw.WriteHeader(hdr)
		case fi.Mode().IsRegular():
			hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, fi.Size(), 0o644
			if fi.Mode()&0o111 != 0 {
				hdr.Mode = 0o755
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.CopyN(tw, f, fi.Size())
			return err
		default:
			return fmt.Errorf("%s is not a regular file or folder (%s); an artifact holds only those", p, fi.Mode().Type())
		}
	})
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	return buf.Bytes(), nil
}

// Push packs a version folder that verifies (manifest.Load), pushes it to
// repo as an artifact tagged <skill>-<version>, and, with cli, records its
// digest as the skill's desired version under prefix.
func Push(ctx context.Context, repo *remote.Repository, cli *clientv3.Client, prefix, dir string) (Desired, error) {
	v := manifest.Load(dir, manifest.Options{})
	if v.Status != manifest.StatusValid {
		return Desired{}, fmt.Errorf("push %s: the version folder is %s: %v", dir, v.Status, v.Problems)
	}
	layer, err := Pack(dir)
	if err != nil {
		return Desired{}, err
	}
	ld := content.NewDescriptorFromBytes(LayerMediaType, layer)
	ld.Annotations = map[string]string{ocispec.AnnotationTitle: v.Skill + "-" + v.Version + ".tar"}
	if ok, err := repo.Exists(ctx, ld); err != nil {
		return Desired{}, fmt.Errorf("push %s: %w", dir, err)
	} else if !ok {
		if err := repo.Push(ctx, ld, bytes.NewReader(layer)); err != nil {
			return Desired{}, fmt.Errorf("push %s: layer: %w", dir, err)
		}
	}
	md, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{
		Layers: []ocispec.Descriptor{ld},
		ManifestAnnotations: map[string]string{
			ocispec.AnnotationCreated: "1970-01-01T00:00:00Z", // reproducible: same folder, same digest
			"io.skillhost.skill":      v.Skill,
			"io.skillhost.version":    v.Version,
		},
	})
	if err != nil {
		return Desired{}, fmt.Errorf("push %s: manifest: %w", dir, err)
	}
	if err := repo.Tag(ctx, md, v.Skill+"-"+v.Version); err != nil {
		return Desired{}, fmt.Errorf("push %s: tag: %w", dir, err)
	}
	d := Desired{Version: v.Version, Digest: md.Digest.String(), Pushed: time.Now().UTC()}
	if cli != nil {
		if err := recordDesired(ctx, cli, prefix, v.Skill, d); err != nil {
			return d, fmt.Errorf("pushed %s as %s but could not record it as desired: %w", dir, d.Digest, err)
		}
	}
	return d, nil
}

// Fetch pulls the artifact with digest from repo and verifies it: the
// manifest's bytes hash to the digest, it is a skill artifact with one
// layer of bounded size, and the layer's bytes hash to its digest. It
// returns the layer.
func Fetch(ctx context.Context, repo *remote.Repository, digest string) ([]byte, error) {
	md, err := repo.Resolve(ctx, digest)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", digest, err)
	}
	if md.Digest.String() != digest {
		return nil, fmt.Errorf("the registry answered %s for %s", md.Digest, digest)
	}
	if md.Size > 4<<20 {
		return nil, fmt.Errorf("manifest %s is %d bytes: not a skill artifact", digest, md.Size)
	}
	mb, err := content.FetchAll(ctx, repo, md) // verifies size and digest
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", digest, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", digest, err)
	}
	if m.ArtifactType != ArtifactType || len(m.Layers) != 1 || m.Layers[0].MediaType != LayerMediaType {
		return nil, fmt.Errorf("%s is not a skill artifact (artifact type %q, %d layers)", digest, m.ArtifactType, len(m.Layers))
	}
	l := m.Layers[0]
	if l.Size < 0 || l.Size > MaxArtifactBytes {
		return nil, fmt.Errorf("layer %s of %s is %d bytes, over the %d limit", l.Digest, digest, l.Size, MaxArtifactBytes)
	}
	b, err := content.FetchAll(ctx, repo, l) // verifies size and digest
	if err != nil {
		return nil, fmt.Errorf("layer %s of %s: %w", l.Digest, digest, err)
	}
	return b, nil
}

// Unpack installs a layer as <skills>/<skill>/<version>, atomically: it is
// unpacked into <skills>/.staging (which the scanner ignores), verified as
// the loader would (manifest.Load: schema, names, the entrypoint's
// sha256), and renamed into place, replacing a folder of that version
// unless that folder already packs to the same layer. A
// layer that does not verify is refused and nothing in the tree changes.
func Unpack(layer []byte, skills, skill, version string, strict bool) error {
	staging := filepath.Join(skills, ".staging")
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	tmp, err := os.MkdirTemp(staging, skill+"-"+version+"-")
	if err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, skill, version)
	if err := untar(layer, dir); err != nil {
		return fmt.Errorf("unpack %s %s: %w", skill, version, err)
	}
	v := manifest.Load(dir, manifest.Options{StrictModes: strict})
	if v.Status != manifest.StatusValid {
		return fmt.Errorf("unpack %s %s: the artifact's folder is %s: %v", skill, version, v.Status, v.Problems)
	}
	if v.Skill != skill || v.Version != version {
		return fmt.Errorf("unpack: the artifact holds %s %s, not %s %s", v.Skill, v.Version, skill, version)
	}
	final := filepath.Join(skills, skill, version)
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	if same, err := Pack(final); err == nil && bytes.Equal(same, layer) {
		return nil // already there, byte for byte: nothing to swap
	}
	if _, err := os.Stat(final); err == nil {
		// A folder of that version is there: move it aside first (the
		// loader sees a removal, then the new folder arrive whole).
		if err := os.Rename(final, filepath.Join(tmp, "old")); err != nil {
			return fmt.Errorf("unpack: move the old %s aside: %w", final, err)
		}
	}
	if err := os.Rename(dir, final); err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	return nil
}

// untar writes a layer into dir: regular files and folders only, no path
// that leaves dir.
func untar(layer []byte, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(hdr.Name)
		if name == "." || path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("entry %q leaves the version folder", hdr.Name)
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			mode := os.FileMode(0o644)
			if hdr.Mode&0o111 != 0 {
				mode = 0o755
			}
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q is not a regular file or folder", hdr.Name)
		}
	}
}

// recordDesired makes d the skill's desired version, with what was desired
// before as its Previous, in one compare-and-swap.
func recordDesired(ctx context.Context, cli *clientv3.Client, prefix, skill string, d Desired) error {
	key := desiredPrefix(prefix) + skill
	for range updateAttempts {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		resp, err := cli.Get(ctx, key)
		if err != nil {
			cancel()
			return err
		}
		var rev int64
		d.Previous = nil
		if len(resp.Kvs) == 1 {
			rev = resp.Kvs[0].ModRevision
			var prev Desired
			switch {
			case json.Unmarshal(resp.Kvs[0].Value, &prev) != nil || prev.Digest == "":
			case prev.Digest == d.Digest: // the same push again keeps its way back
				d.Previous = prev.Previous
			default:
				prev.Previous, prev.RolledBack = nil, ""
				d.Previous = &prev
			}
		}
		b, _ := json.Marshal(d)
		tr, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).Then(clientv3.OpPut(key, string(b))).Commit()
		cancel()
		if err != nil {
			return err
		}
		if tr.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("desired %s: %w", skill, ErrConflict)
}
