//go:build !memor_encrypt_all

package memor_test

// encryptAllBuild: see encrypt_all_test.go.
const encryptAllBuild = false
