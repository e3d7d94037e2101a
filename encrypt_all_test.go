//go:build memor_encrypt_all

package memor_test

// encryptAllBuild: kv encrypts every store (kv/crypt_all.go).
const encryptAllBuild = true
