//go:build !imagectl_stdjson

package runtime

import (
	"strconv"
	"unicode/utf8"
)

// The fingerprint is written on every container start, before the command
// runs. encoding/json spends about half a millisecond building its
// reflection caches the first time it meets these types, so the init writes
// them by hand. TestFingerprintJSONMatchesEncodingJSON fills every field
// (through reflection, so a new field cannot be missed) and checks the bytes
// are exactly json.MarshalIndent(fp, "", "  ").

type jw struct {
	b     []byte
	depth int
	first []bool
}

func (w *jw) open(c byte) {
	w.b = append(w.b, c)
	w.depth++
	w.first = append(w.first, true)
}

func (w *jw) close(c byte) {
	empty := w.first[len(w.first)-1]
	w.first = w.first[:len(w.first)-1]
	w.depth--
	if !empty {
		w.newline()
	}
	w.b = append(w.b, c)
}

func (w *jw) newline() {
	w.b = append(w.b, '\n')
	for i := 0; i < w.depth; i++ {
		w.b = append(w.b, ' ', ' ')
	}
}

// elem starts an array element or object member.
func (w *jw) elem() {
	if w.first[len(w.first)-1] {
		w.first[len(w.first)-1] = false
	} else {
		w.b = append(w.b, ',')
	}
	w.newline()
}

func (w *jw) key(k string) {
	w.elem()
	w.str(k)
	w.b = append(w.b, ':', ' ')
}

func (w *jw) strField(k, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	w.key(k)
	w.str(v)
}

func (w *jw) intField(k string, v int64, omitEmpty bool) {
	if omitEmpty && v == 0 {
		return
	}
	w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
}

func (w *jw) boolField(k string, v, omitEmpty bool) {
	if omitEmpty && !v {
		return
	}
	w.key(k)
	w.b = strconv.AppendBool(w.b, v)
}

// str writes s quoted the way encoding/json does (HTML-safe, invalid UTF-8
// as U+FFFD, U+2028/U+2029 escaped).
func (w *jw) str(s string) {
	const hex = "0123456789abcdef"
	w.b = append(w.b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				w.b = append(w.b, '\\', c)
			case c == '\n':
				w.b = append(w.b, '\\', 'n')
			case c == '\r':
				w.b = append(w.b, '\\', 'r')
			case c == '\t':
				w.b = append(w.b, '\\', 't')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				w.b = append(w.b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				w.b = append(w.b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			w.b = append(w.b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			w.b = append(w.b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			w.b = append(w.b, s[i:i+size]...)
		}
		i += size
	}
	w.b = append(w.b, '"')
}

// marshalFingerprint is json.MarshalIndent(fp, "", "  ") without reflection.
func marshalFingerprint(fp Fingerprint) []byte {
	w := &jw{b: make([]byte, 0, 2048)}
	w.open('{')
	w.intField("version", int64(fp.Version), false)
	w.strField("collected_at", fp.CollectedAt, true)
	w.strField("hostname", fp.Hostname, true)
	w.key("image")
	w.open('{')
	w.strField("name", fp.Image.Name, true)
	w.strField("cuda", fp.Image.CUDA, true)
	w.strField("torch", fp.Image.Torch, true)
	w.strField("python", fp.Image.Python, true)
	w.strField("nccl", fp.Image.NCCL, true)
	w.strField("cudnn", fp.Image.CUDNN, true)
	w.strField("lock_digest", fp.Image.LockDigest, true)
	w.close('}')
	w.strField("image_digest", fp.ImageDigest, true)
	w.strField("kernel", fp.Kernel, true)
	w.strField("arch", fp.Arch, false)
	w.intField("cpus", int64(fp.CPUs), false)
	w.intField("memory_bytes", fp.MemoryBytes, true)
	w.key("driver")
	w.open('{')
	w.strField("version", fp.Driver.Version, true)
	w.key("gpus")
	if fp.Driver.GPUs == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.open('[')
		for _, g := range fp.Driver.GPUs {
			w.elem()
			w.open('{')
			w.strField("model", g.Model, false)
			w.strField("uuid", g.UUID, true)
			w.strField("bus_location", g.BusLocation, false)
			w.intField("device_minor", int64(g.DeviceMinor), false)
			w.boolField("device_node", g.DeviceNode, false)
			w.close('}')
		}
		w.close(']')
	}
	w.close('}')
	w.strField("driver_floor", fp.DriverFloor, true)
	w.intField("swappiness", int64(fp.Swappiness), false)
	w.key("shm")
	w.open('{')
	w.strField("path", fp.Shm.Path, false)
	w.intField("bytes", fp.Shm.Bytes, false)
	w.strField("fstype", fp.Shm.FSType, true)
	w.boolField("resized", fp.Shm.Resized, true)
	w.strField("advice", fp.Shm.Advice, true)
	w.close('}')
	w.key("storage")
	w.open('{')
	w.strField("path", fp.Storage.Path, true)
	w.boolField("ready", fp.Storage.Ready, false)
	w.strField("fstype", fp.Storage.FSType, true)
	w.strField("source", fp.Storage.Source, true)
	w.strField("options", fp.Storage.Options, true)
	w.close('}')
	if len(fp.Caches) > 0 {
		w.key("caches")
		w.open('[')
		for _, c := range fp.Caches {
			w.elem()
			w.open('{')
			w.strField("name", c.Name, false)
			w.strField("path", c.Path, false)
			w.key("env")
			if c.Env == nil {
				w.b = append(w.b, "null"...)
			} else {
				w.open('[')
				for _, e := range c.Env {
					w.elem()
					w.str(e)
				}
				w.close(']')
			}
			w.boolField("compile", c.Compile, false)
			w.boolField("from_env", c.FromEnv, true)
			w.close('}')
		}
		w.close(']')
	}
	w.close('}')
	return w.b
}
