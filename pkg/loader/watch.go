package loader

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/skillhost/skillhost/pkg/manifest"
)

// watcher follows the tree with fsnotify. fsnotify is not recursive, so it
// watches the root, each skill folder and each version folder, and the
// folders down to an entrypoint in a subfolder ("bin/calc"), adding watches
// as folders appear. Every event only schedules a rescan: bursts are merged
// by a quiet-period debounce, and a periodic full rescan covers lost events
// (inotify queue overflow, network filesystems).
type watcher struct {
	l       *Loader
	fs      *fsnotify.Watcher
	watched map[string]bool // owned by run, as is failed
	failed  map[string]bool // paths whose watch failed, warned about once
}

func newWatcher(l *Loader) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w := &watcher{l: l, fs: fw, watched: map[string]bool{}, failed: map[string]bool{}}
	w.addTree()
	return w, nil
}

// addTree adds watches for the root, the two folder levels below it, and
// the folders that lead to each version's entrypoint. It runs before every
// rescan, so a folder that appears is watched before the scan reads it: a
// write before the watch is in the scan, one after it is an event.
func (w *watcher) addTree() {
	root := w.l.cfg.Skills
	w.add(root)
	skills, _ := os.ReadDir(root)
	for _, s := range skills {
		if !s.IsDir() || ignored(s.Name()) {
			continue
		}
		sdir := filepath.Join(root, s.Name())
		w.add(sdir)
		versions, _ := os.ReadDir(sdir)
		for _, v := range versions {
			if v.IsDir() && !ignored(v.Name()) {
				vdir := filepath.Join(sdir, v.Name())
				w.add(vdir)
				for _, d := range entrypointDirs(vdir) {
					w.add(d)
				}
			}
		}
	}
}

func (w *watcher) add(dir string) {
	if w.watched[dir] {
		return
	}
	if err := w.fs.Add(dir); err != nil {
		// A folder gone before its watch is no news; anything else (most
		// often fs.inotify.max_user_watches) leaves changes there to the
		// periodic resync, which an operator should hear of, once.
		if !os.IsNotExist(err) && !w.failed[dir] {
			w.failed[dir] = true
			w.l.log.Warn("cannot watch a folder; its changes wait for the periodic resync", "path", dir, "error", err, "resync", w.l.cfg.Resync)
		}
		return
	}
	delete(w.failed, dir)
	w.watched[dir] = true
}

// entrypointDirs returns the folders between vdir and the entrypoint its
// manifest names (or an MCP version's command file), when that is in a
// subfolder; nothing for a manifest that is missing, malformed or names a
// path outside (the scan reports those). Other files deep in an MCP
// version's folder (its node_modules) are not watched: an edit there in
// place is seen at the periodic resync; an install renames a whole folder.
func entrypointDirs(vdir string) []string {
	b, err := os.ReadFile(filepath.Join(vdir, manifest.FileName))
	if err != nil {
		return nil
	}
	var m struct {
		Entrypoint string `json:"entrypoint"`
		Command    string `json:"command"`
	}
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	if m.Entrypoint == "" && strings.Contains(m.Command, "/") {
		m.Entrypoint = m.Command
	}
	if !filepath.IsLocal(m.Entrypoint) {
		return nil
	}
	var dirs []string
	for d := filepath.Dir(filepath.Clean(m.Entrypoint)); d != "."; d = filepath.Dir(d) {
		dirs = append(dirs, filepath.Join(vdir, d))
	}
	return dirs
}

func ignored(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

// depth is 1 for a skill folder, 2 for a version folder, 3 for a file in
// one; 0 for the root and -1 outside or in an ignored folder.
func (w *watcher) depth(path string) int {
	rel, err := filepath.Rel(w.l.cfg.Skills, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return -1
	}
	if rel == "." {
		return 0
	}
	parts := strings.Split(rel, string(filepath.Separator))
	for _, p := range parts {
		if ignored(p) {
			return -1
		}
	}
	return len(parts)
}

func (w *watcher) run(ctx context.Context) {
	defer func() {
		w.fs.Close()
		// Drain what fsnotify may still deliver so its goroutine can exit.
		for range w.fs.Events {
		}
		for range w.fs.Errors {
		}
	}()
	resync := time.NewTicker(w.l.cfg.Resync)
	defer resync.Stop()
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	// pending is when the oldest event not yet scanned came (zero: none). The
	// quiet period restarts with every event, but never past maxWait from
	// pending, so a folder that is written to all the time (a skill writing
	// into its working directory) cannot hold back every other change.
	var pending time.Time
	maxWait := 10 * w.l.cfg.Debounce
	schedule := func() {
		now := time.Now()
		if pending.IsZero() {
			pending = now
		}
		debounce.Reset(max(0, min(w.l.cfg.Debounce, pending.Add(maxWait).Sub(now))))
	}
	rescan := func(why string) {
		debounce.Stop()
		pending = time.Time{}
		w.addTree()
		if _, _, err := w.l.scanAndDispatch(false); err != nil && ctx.Err() == nil {
			w.l.log.Warn("rescan failed", "reason", why, "error", err)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.fs.Events:
			if !ok {
				return
			}
			d := w.depth(ev.Name)
			if d < 0 {
				continue
			}
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				delete(w.watched, ev.Name)
			}
			if ev.Has(fsnotify.Create) && d <= 2 {
				if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
					w.add(ev.Name)
					// A version folder that arrives whole (an atomic rename
					// of a staged copy) and verifies needs no quiet period.
					if d == 2 && w.complete(ev.Name) {
						rescan("atomic rename of " + ev.Name)
						continue
					}
				}
			}
			schedule()
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			w.l.log.Warn("file watch error; rescanning", "error", err)
			schedule()
		case <-w.l.rewatch:
			w.addTree() // a rescan from the API or SIGHUP: folders it found get watches
		case <-debounce.C:
			rescan("files changed")
		case <-resync.C:
			rescan("periodic resync")
		}
	}
}

// complete reports whether a version folder verifies as it stands.
func (w *watcher) complete(dir string) bool {
	v := manifest.Load(dir, manifest.Options{StrictModes: w.l.cfg.StrictModes, Hashes: w.l.hashes})
	return v.Status == manifest.StatusValid
}
