package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRemoveDataDirRefusesForeignDirs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(dir, "mysql"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := removeDataDir(dir, false); err == nil {
		t.Fatal("removed a datadir without the sandbox option file")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("refused datadir is gone: %v", err)
	}
	if err := writeOptionFile(layout{dataDir: dir}.optionFile(), nil); err != nil {
		t.Fatal(err)
	}
	if err := removeDataDir(dir, false); err != nil {
		t.Fatalf("sandbox datadir: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("sandbox datadir still there: %v", err)
	}
	if err := removeDataDir("/", true); err == nil {
		t.Error("removeDataDir(/) succeeded")
	}
	if err := removeTmpDir("/tmp"); err == nil {
		t.Error("removeTmpDir(/tmp) succeeded")
	}
}

func TestPIDRunning(t *testing.T) {
	self := os.Getpid()
	if !pidRunning(self, "") {
		t.Error("own pid not running")
	}
	if pidRunning(self, "/no/such/datadir") {
		t.Error("own pid matched a foreign datadir marker")
	}
	if pidRunning(0, "") || pidRunning(-1, "") {
		t.Error("pid <= 0 running")
	}
}
