package proc

import (
	"fmt"
	"os/user"
	"strconv"
	"strings"
)

// SkillUser is the account every skill process runs as when it is not the
// host's own. A host that runs as root and starts skills as root gives them
// everything: a root skill may read the host's memory and environment
// (/proc/<host>/environ holds OPENAI_API_KEY when it came from there), kill
// the host, or read any file the host can. Running skills as an unprivileged
// account closes that; the host's non-dumpable flag then keeps them out of
// its /proc entries.
type SkillUser struct {
	Name string // as the operator named it, for messages
	UID  uint32
	GID  uint32
}

func (u *SkillUser) String() string {
	return fmt.Sprintf("%s (uid %d, gid %d)", u.Name, u.UID, u.GID)
}

// LookupSkillUser resolves a user name ("nobody"), a uid ("65534", whose
// group is then the user's primary group, or the same number when the uid
// has no passwd entry) or "uid:gid".
func LookupSkillUser(s string) (*SkillUser, error) {
	if s == "" {
		return nil, fmt.Errorf("skill user: empty name")
	}
	if uidText, gidText, ok := strings.Cut(s, ":"); ok {
		uid, err1 := strconv.ParseUint(uidText, 10, 32)
		gid, err2 := strconv.ParseUint(gidText, 10, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("skill user %q: expected a name, a uid or uid:gid (numbers)", s)
		}
		return &SkillUser{Name: s, UID: uint32(uid), GID: uint32(gid)}, nil
	}
	var u *user.User
	var err error
	if _, nerr := strconv.ParseUint(s, 10, 32); nerr == nil {
		u, err = user.LookupId(s)
		if err != nil {
			// A bare uid need not exist in passwd: run as uid:uid.
			n, _ := strconv.ParseUint(s, 10, 32)
			return &SkillUser{Name: s, UID: uint32(n), GID: uint32(n)}, nil
		}
	} else if u, err = user.Lookup(s); err != nil {
		return nil, fmt.Errorf("skill user %q: %w", s, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("skill user %q: uid %q or gid %q is not a number", s, u.Uid, u.Gid)
	}
	return &SkillUser{Name: s, UID: uint32(uid), GID: uint32(gid)}, nil
}
