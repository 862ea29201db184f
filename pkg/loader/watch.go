package loader

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/skillhost/skillhost/pkg/manifest"
)

// watcher follows the tree with fsnotify. fsnotify is not recursive, so it
// watches the root, each skill folder and each version folder, adding
// watches as folders appear. Every event only schedules a rescan: bursts are
// merged by a quiet-period debounce, and a periodic full rescan covers lost
// events (inotify queue overflow, network filesystems).
type watcher struct {
	l       *Loader
	fs      *fsnotify.Watcher
	watched map[string]bool // owned by run
}

func newWatcher(l *Loader) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w := &watcher{l: l, fs: fw, watched: map[string]bool{}}
	w.addTree()
	return w, nil
}

// addTree adds watches for the root and the two folder levels below it.
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
				w.add(filepath.Join(sdir, v.Name()))
			}
		}
	}
}

func (w *watcher) add(dir string) {
	if w.watched[dir] {
		return
	}
	if err := w.fs.Add(dir); err != nil {
		w.l.log.Debug("watch failed", "path", dir, "error", err)
		return
	}
	w.watched[dir] = true
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
