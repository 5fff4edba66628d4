package testenv

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// gatewayPkg is msggate's product command, the module's root package.
const gatewayPkg = "github.com/msggate/msggate"

// BuildGateway builds msggate's product command into dir/msggate and returns its path. The
// measuring tools under cmd/ run their gateways as child processes of the real binary, built
// from the checkout they run in, so that a run measures the code beside it; progress is told
// that a build is under way (it takes a while on an empty build cache).
func BuildGateway(dir string, progress io.Writer) (string, error) {
	goBin, err := findGo()
	if err != nil {
		return "", err
	}
	bin, err := filepath.Abs(filepath.Join(dir, "msggate"))
	if err != nil {
		return "", err
	}
	fmt.Fprintln(progress, "building the gateway (go build)...")
	build := exec.Command(goBin, "build", "-o", bin, gatewayPkg)
	build.Dir = moduleDir()
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", gatewayPkg, err, out)
	}
	return bin, nil
}

// moduleDir is the root of the checkout this package was compiled from, so that the go
// builds testenv runs find the module from any working directory; "" (the working directory)
// when the sources are not where the compiler saw them (a -trimpath build, another machine).
func moduleDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return ""
	}
	return root
}
