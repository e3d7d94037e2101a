package cli

import "testing"

// TestPseudoVersion: the versions Go stamps on untagged checkouts are
// recognised, a release is not.
func TestPseudoVersion(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{
		"v0.0.0-20261202010112-fcf6d05c7f66":       true,
		"v0.0.0-20261202010112-fcf6d05c7f66+dirty": true,
		"v0.1.1-0.20261202010112-fcf6d05c7f66":     true,
		"v0.1.0":                                   false,
		"v0.1.0+incompatible":                      false,
		"v1.2.3-rc.1":                              false,
	} {
		if got := pseudoVersion.MatchString(v); got != want {
			t.Errorf("%s: pseudo %v, want %v", v, got, want)
		}
	}
}
