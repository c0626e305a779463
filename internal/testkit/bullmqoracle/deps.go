package bullmqoracle

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
)

// version is the BullMQ release the oracle pins in node/package.json.
const version = "6.7.0"

// Version returns the Node BullMQ version the oracle drives, "6.7.0".
func Version() string { return version }

var (
	depsOnce sync.Once
	depsDir  string
	depsErr  error
)

// nodeDir returns internal/testkit/bullmqoracle/node with its npm dependencies
// installed, running `npm ci` when they are missing or stale. The result is
// computed once per process; parallel test binaries serialise the install
// with an flock on node/.npm-ci.lock.
func nodeDir() (string, error) {
	depsOnce.Do(func() { depsDir, depsErr = prepareNodeDir() })
	return depsDir, depsErr
}

func prepareNodeDir() (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", errors.New("node not found on PATH: the BullMQ oracle needs Node.js >= 20 and npm (apt-get install -y nodejs npm)")
	}
	dir, err := locateNodeDir()
	if err != nil {
		return "", err
	}
	if depsInstalled(dir) == nil {
		return dir, nil
	}

	lock, err := os.OpenFile(filepath.Join(dir, ".npm-ci.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("open npm install lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()

	// Another process may have installed while we waited for the lock.
	reason := depsInstalled(dir)
	if reason == nil {
		return dir, nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", fmt.Errorf("BullMQ oracle dependencies missing in %s (%w) and npm is not on PATH; install npm and run `make deps`", dir, reason)
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm ci in %s failed (needed because %w): %w\n%s", dir, reason, err, out)
	}
	if reason := depsInstalled(dir); reason != nil {
		return "", fmt.Errorf("npm ci in %s succeeded but dependencies are still not usable: %w", dir, reason)
	}
	return dir, nil
}

// depsInstalled reports why node_modules does not hold exactly the
// dependency versions package.json pins, or nil when it does.
func depsInstalled(dir string) error {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := readJSON(filepath.Join(dir, "package.json"), &pkg); err != nil {
		return err
	}
	if pkg.Dependencies["bullmq"] != version {
		return fmt.Errorf("node/package.json pins bullmq %q, the Go side expects %q", pkg.Dependencies["bullmq"], version)
	}
	for name, want := range pkg.Dependencies {
		var installed struct {
			Version string `json:"version"`
		}
		if err := readJSON(filepath.Join(dir, "node_modules", name, "package.json"), &installed); err != nil {
			return fmt.Errorf("%s is not installed", name)
		}
		if installed.Version != want {
			return fmt.Errorf("%s %s is installed, package.json pins %s", name, installed.Version, want)
		}
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}

// locateNodeDir finds internal/testkit/bullmqoracle/node below the module root: it
// walks up from the working directory to go.mod, and falls back to the
// directory of this source file.
func locateNodeDir() (string, error) {
	const rel = "internal/testkit/bullmqoracle/node"
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				cand := filepath.Join(d, rel)
				if _, err := os.Stat(filepath.Join(cand, "driver.mjs")); err == nil {
					return cand, nil
				}
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		cand := filepath.Join(filepath.Dir(file), "node")
		if _, err := os.Stat(filepath.Join(cand, "driver.mjs")); err == nil {
			return cand, nil
		}
	}
	return "", fmt.Errorf("cannot find %s: walk up from the working directory found no go.mod with it", rel)
}
