package cli

import (
	"regexp"
	"runtime/debug"

	"github.com/memor-db/memor"
)

// pseudoVersion matches the version Go stamps on a build from a git
// checkout without a release tag (v0.0.0-20261202010112-fcf6d05c7f66,
// "+dirty" when modified): it names a commit, not a release, so memor's
// own version and the revision say it better.
var pseudoVersion = regexp.MustCompile(`-(0\.)?\d{14}-[0-9a-f]{12}(\+dirty)?$`)

// version is what --version and /v1/health report: Version if set at
// link time, else the module version of a `go install …@version`, else
// memor.Version with the VCS revision the binary was built from
// ("v0.1.0+3f1c2a9b0d4e", ".dirty" for uncommitted changes).
func version() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return memor.Version
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" && !pseudoVersion.MatchString(v) {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return memor.Version
	}
	v := memor.Version + "+" + rev[:min(12, len(rev))]
	if dirty {
		v += ".dirty"
	}
	return v
}
