package discover

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Public key file names in a keys folder: the release signing key's and
// the GPU verifier's.
const (
	SigningKeyFile  = "cosign.pub"
	VerifierKeyFile = "verifier.pub"
)

// KeysDirEnv names the folder holding the platform's public keys when the
// working directory has no keys/ folder.
const KeysDirEnv = "IMAGECTL_KEYS_DIR"

// Keys are the platform's public key files.
type Keys struct {
	Dir      string `json:"dir"`
	Signing  string `json:"signing"`
	Verifier string `json:"verifier"`
}

// NoKeysError says where the public keys were looked for.
type NoKeysError struct {
	Tried []string
}

func (e *NoKeysError) Error() string {
	return fmt.Sprintf("no public keys (%s and %s) in %v: get them from the platform team (docs/users.md) and put them in ~/.config/imagectl/keys, set %s, or pass --key and --verifier-key",
		SigningKeyFile, VerifierKeyFile, e.Tried, KeysDirEnv)
}

// DefaultKeys finds the platform's public keys: keys/ in the working
// directory (the platform's own checkout) when it holds cosign.pub, else
// $IMAGECTL_KEYS_DIR, else ~/.config/imagectl/keys (a user's). A folder
// counts when it holds cosign.pub; verifier.pub beside it is expected.
func DefaultKeys() (Keys, error) {
	var dirs []string
	dirs = append(dirs, "keys")
	if d := os.Getenv(KeysDirEnv); d != "" {
		dirs = append(dirs, d)
	}
	if cfg, err := os.UserConfigDir(); err == nil {
		dirs = append(dirs, filepath.Join(cfg, "imagectl", "keys"))
	}
	return findKeys(dirs)
}

func findKeys(dirs []string) (Keys, error) {
	for _, d := range dirs {
		s := filepath.Join(d, SigningKeyFile)
		if _, err := os.Stat(s); err == nil {
			return Keys{Dir: d, Signing: s, Verifier: filepath.Join(d, VerifierKeyFile)}, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return Keys{}, fmt.Errorf("public keys: %w", err)
		}
	}
	return Keys{}, &NoKeysError{Tried: dirs}
}
