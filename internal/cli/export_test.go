package cli

// SetImportWindow sets how many lines an import reads before it stores them, and returns the
// function that puts the default back.
func SetImportWindow(lines int) (restore func()) {
	old := importWindow
	importWindow = lines
	return func() { importWindow = old }
}

// ApplyGCPercent is applyGCPercent, for the tests.
var ApplyGCPercent = applyGCPercent
