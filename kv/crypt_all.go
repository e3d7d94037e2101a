//go:build memor_encrypt_all

package kv

// encryptAll: built with the tag memor_encrypt_all, every store opened
// without Options.Encryption is encrypted under testAllKEK, so that the
// whole test suite runs on encrypted stores (go test -tags
// memor_encrypt_all ./...). Never for a real build: the KEK is public.
const encryptAll = true
