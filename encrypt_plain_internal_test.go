//go:build !memor_encrypt_all

package memor

// encryptAllBuild: see encrypt_all_internal_test.go.
const encryptAllBuild = false
