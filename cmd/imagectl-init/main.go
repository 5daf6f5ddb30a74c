// Command imagectl-init is the image's entrypoint (PID 1): it prepares the
// container (storage, swappiness, /dev/shm, caches, driver floor,
// fingerprint) as the baked runtime config says, then runs the user's command,
// forwarding signals, reaping zombies and exiting with the command's code.
//
//	imagectl-init [--] COMMAND [ARG...]
//	imagectl-init doctor [--output json]
//
// See docs/init.md.

// GOMAXPROCS does not matter to an init that mostly waits: skip reading the
// cgroup limits at start-up and the periodic re-check.
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"context"
	"fmt"
	"os"

	"imagectl/internal/exitcode"
	"imagectl/internal/logs"
	"imagectl/internal/runtime"
)

const usage = "usage: imagectl-init [--] COMMAND [ARG...]  |  imagectl-init doctor [--output json]"

func main() {
	proc, lerr := runtime.Listen()
	log := newLogger(os.Stderr, os.Getenv(runtime.EnvDebug) != "")
	ctx := logs.With(context.Background(), log)
	if lerr != nil {
		log.Warn(lerr.Error() + "; orphaned processes will not be reaped by the init: run it as PID 1 or on a kernel with PR_SET_CHILD_SUBREAPER")
	}
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "doctor" {
		os.Exit(doctor(ctx, args[1:]))
	}
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Println(usage + "\n\nPrepares the container as " + runtime.ConfigPath + " (or $" + runtime.EnvConfig + ") says,\nthen runs COMMAND as its child: signals forwarded, zombies reaped, the\ncommand's exit code passed through. See docs/init.md.")
		os.Exit(exitcode.OK)
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fail(exitcode.Usage, "no command given; "+usage)
	}
	cfg, err := runtime.LoadConfig(os.Getenv)
	if err != nil {
		fail(exitcode.Usage, err.Error())
	}

	pctx, stop := proc.Context(ctx)
	prep, err := runtime.Prepare(pctx, cfg, os.Environ())
	if sig, ok := stop(); ok {
		fail(128+int(sig), fmt.Sprintf("received %v before the command started; not starting it", sig))
	}
	if err != nil {
		fail(exitcode.Code(err), err.Error())
	}
	if s := prep.Summary(); s != "" && !cfg.Quiet {
		log.Info(s)
	}
	// The fingerprint is there before the command starts: probes read it.
	if _, path, err := prep.WriteFingerprint(ctx); err != nil {
		log.Warn(err.Error())
	} else if path != "" {
		log.Debug("fingerprint written", "path", path)
	}
	pid, code, err := proc.Start(ctx, args, prep.Env)
	if err != nil {
		fail(code, err.Error())
	}
	// The cache GC runs beside the command: it never delays the start, and
	// it leaves alone anything written after the init began.
	go func() {
		r, err := prep.CollectGarbage(ctx)
		if err != nil {
			log.Debug("cache gc", "error", err)
		} else if r.Removed > 0 {
			log.Debug("cache gc", "removed", r.Removed, "removed_bytes", r.RemovedBytes, "kept_bytes", r.KeptBytes)
		}
	}()
	code = proc.Wait(ctx, pid, cfg.GracePeriod.Std())
	os.Exit(code)
}

func fail(code int, msg string) {
	fmt.Fprintln(os.Stderr, "imagectl-init:", msg)
	os.Exit(code)
}
