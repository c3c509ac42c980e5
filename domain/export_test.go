package domain

// SetLegacyListPage makes SweepLegacyArtifacts list n objects at a time, until the
// returned function puts the page size back.
func SetLegacyListPage(n int) (restore func()) {
	was := legacyListPage
	legacyListPage = n
	return func() { legacyListPage = was }
}
