package memor

// Version is this release of memor (semantic versioning; see the README's
// Releases section). The binaries report it with the VCS revision they
// were built from.
const Version = "v0.1.0"
