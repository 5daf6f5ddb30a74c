package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"imagectl/internal/strictjson"
	"imagectl/internal/version"
)

// Environment variables the platform may set to override the baked config.
// Each is documented in docs/init.md.
const (
	EnvConfig          = "IMAGECTL_RUNTIME_CONFIG"     // path of the config file (default ConfigPath)
	EnvStoragePath     = "IMAGECTL_STORAGE_PATH"       // Storage.Path
	EnvStorageReady    = "IMAGECTL_STORAGE_READY_FILE" // Storage.ReadyFile
	EnvStorageTimeout  = "IMAGECTL_STORAGE_TIMEOUT"    // Storage.Timeout, e.g. 90s
	EnvStorageRequired = "IMAGECTL_STORAGE_REQUIRED"   // Storage.Required, true/false
	EnvSwappiness      = "IMAGECTL_SWAPPINESS"         // Swappiness, 0-200, or "off"
	EnvMinShm          = "IMAGECTL_MIN_SHM"            // MinShmBytes, bytes or 512M, 8G
	EnvShmPath         = "IMAGECTL_SHM_PATH"           // ShmPath
	EnvTmpDir          = "IMAGECTL_TMPDIR"             // TmpDir
	EnvDriverFloor     = "IMAGECTL_DRIVER_FLOOR"       // DriverFloor
	EnvDriverPolicy    = "IMAGECTL_DRIVER_POLICY"      // DriverPolicy, fail or warn
	EnvFingerprint     = "IMAGECTL_FINGERPRINT_PATH"   // FingerprintPath, "off" disables
	EnvGracePeriod     = "IMAGECTL_GRACE_PERIOD"       // GracePeriod, e.g. 30s
	EnvQuiet           = "IMAGECTL_QUIET"              // Quiet, true/false
	EnvImageDigest     = "IMAGECTL_IMAGE_DIGEST"       // the image digest, for the fingerprint
	EnvDebug           = "IMAGECTL_INIT_DEBUG"         // log every step to stderr
)

// LoadConfig reads the runtime config from the path named by
// IMAGECTL_RUNTIME_CONFIG in env, or ConfigPath. A missing file at the
// default path is not an error (the image has nothing baked in: the init then
// only supervises); a missing file at an explicit path is. The environment
// overrides are applied after the file is read.
func LoadConfig(getenv func(string) string) (Config, error) {
	var cfg Config
	path, explicit := getenv(EnvConfig), true
	if path == "" {
		path, explicit = ConfigPath, false
	}
	b, err := readFile(path)
	switch {
	case err == nil:
		if err := strictjson.Decode(b, &cfg, "runtime config"); err != nil {
			return cfg, fmt.Errorf("reading runtime config %s: %w", path, err)
		}
	case errors.Is(err, fs.ErrNotExist) && !explicit:
	default:
		return cfg, fmt.Errorf("reading runtime config: %w", err)
	}
	if err := applyEnv(&cfg, getenv); err != nil {
		return cfg, err
	}
	return cfg, validate(cfg)
}

// validate checks the values the init acts on.
func validate(c Config) error {
	if c.Swappiness != nil && (*c.Swappiness < 0 || *c.Swappiness > 200) {
		return fmt.Errorf("swappiness %d: want 0-200", *c.Swappiness)
	}
	switch c.DriverPolicy {
	case "", "warn", "fail":
	default:
		return fmt.Errorf("driver_policy %q: want warn or fail", c.DriverPolicy)
	}
	if c.DriverFloor != "" {
		if _, err := version.Parse(strings.TrimSpace(c.DriverFloor)); err != nil {
			return fmt.Errorf("driver_floor: %w", err)
		}
	}
	if c.MinShmBytes < 0 || c.Caches.GCMaxBytes < 0 {
		return errors.New("sizes must not be negative")
	}
	return nil
}

func applyEnv(c *Config, getenv func(string) string) error {
	str := func(name string, dst *string) {
		if v := getenv(name); v != "" {
			*dst = v
		}
	}
	str(EnvStoragePath, &c.Storage.Path)
	str(EnvStorageReady, &c.Storage.ReadyFile)
	str(EnvShmPath, &c.ShmPath)
	str(EnvTmpDir, &c.TmpDir)
	str(EnvDriverFloor, &c.DriverFloor)
	str(EnvDriverPolicy, &c.DriverPolicy)
	str(EnvFingerprint, &c.FingerprintPath)
	if c.FingerprintPath == "off" {
		c.FingerprintPath = ""
	}
	var errs []error
	boolean := func(name string, dst *bool) {
		if v := getenv(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: want true or false", name, v))
				return
			}
			*dst = b
		}
	}
	duration := func(name string, dst *Duration) {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a duration like 90s", name, v))
				return
			}
			*dst = Duration(d)
		}
	}
	boolean(EnvStorageRequired, &c.Storage.Required)
	boolean(EnvQuiet, &c.Quiet)
	duration(EnvStorageTimeout, &c.Storage.Timeout)
	duration(EnvGracePeriod, &c.GracePeriod)
	if v := getenv(EnvSwappiness); v != "" {
		if v == "off" {
			c.Swappiness = nil
		} else if n, err := strconv.Atoi(v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want 0-200 or off", EnvSwappiness, v))
		} else {
			c.Swappiness = &n
		}
	}
	if v := getenv(EnvMinShm); v != "" {
		n, err := ParseSize(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvMinShm, err))
		} else {
			c.MinShmBytes = n
		}
	}
	return errors.Join(errs...)
}

// ParseSize reads a byte count: a plain number, or one with a binary suffix
// K, M, G or T (an optional trailing "i" and "B" are accepted: 512Mi, 8GB).
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q: want bytes or a number with K, M, G or T", s)
	}
	return n * mult, nil
}

// humanSize renders n bytes the way the advice in messages uses them.
func humanSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dG", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
