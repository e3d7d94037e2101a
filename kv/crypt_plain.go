//go:build !memor_encrypt_all

package kv

// encryptAll: see crypt_all.go.
const encryptAll = false
