//go:build !unix

package gitstore

import "os"

func openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

func readFile(name string) ([]byte, error) { return os.ReadFile(name) }

func createTemp(dir, prefix string) (*os.File, error) { return os.CreateTemp(dir, prefix+"*") }

func writeFile(name string, data []byte, perm os.FileMode) error {
	return os.WriteFile(name, data, perm)
}
