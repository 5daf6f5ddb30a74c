// Command imagectl-init is the image's entrypoint (PID 1): it prepares the
// container (storage, swappiness, /dev/shm, caches, sshd host keys, driver
// floor, fingerprint) as the baked runtime config says, then runs the user's
// command (as the configured user) beside the configured services (sshd,
// Jupyter), forwarding signals, reaping zombies and exiting with the
// command's code. It takes tini's flags, so it can replace tini as is.
//
//	imagectl-init [-s] [-g] [-v] [-w] [-e CODE]... [-p SIGNAL] [--grace-period D] [--] [COMMAND [ARG...]]
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

const usage = `usage: imagectl-init [-s] [-g] [-v] [-w] [-e CODE]... [-p SIGNAL] [--grace-period D] [--] [COMMAND [ARG...]]
       imagectl-init --version | -h
       imagectl-init doctor [--output json]`

const help = usage + `

Prepares the container as ` + runtime.ConfigPath + ` (or $` + runtime.EnvConfig + `) says,
then runs COMMAND as its child: every catchable signal forwarded, zombies
reaped, the command's exit code passed through (128+n when signal n killed it).
With a runtime user, the command runs as that user; the config's services
(sshd, Jupyter) run beside it, or alone when no COMMAND is given.
The flags are tini's, so the init replaces tini as is:

  -s                 require registering as a child subreaper when not PID 1
                     (always tried; also TINI_SUBREAPER)
  -g                 forward signals to the command's process group
                     (also TINI_KILL_PROCESS_GROUP)
  -e CODE            exit 0 when the command exits with CODE (repeatable)
  -p SIGNAL          have the kernel send SIGNAL when the init's parent dies
  -v                 log every step to stderr (also IMAGECTL_INIT_DEBUG)
  -w                 warn for every zombie reaped that is not the command
  --grace-period D   SIGKILL the command's process group D after a SIGTERM or
                     SIGINT (default: never; also the config's grace_period)
  --version, -h      print the version or this help

Examples:
  imagectl-init -- python train.py
  imagectl-init -g -e 143 -- ./serve.sh
  imagectl-init --grace-period 30s -- torchrun train.py
  imagectl-init doctor -o json

See docs/init.md ("Coming from tini").`

func main() {
	// Before anything else: the command must start with no signal blocked.
	reexecErr := runtime.CleanSignalMask()
	args, err := runtime.ParseArgs(os.Args[1:], os.LookupEnv)
	if err != nil {
		fail(exitcode.Usage, err.Error()+"\n"+usage)
	}
	proc, warn, lerr := runtime.Listen(runtime.ListenOptions{RequireSubreaper: args.Subreaper, ParentDeath: args.ParentDeath})
	log := newLogger(stderr, os.Getenv(runtime.EnvDebug) != "" || args.Verbosity > 0)
	ctx := logs.With(context.Background(), log)
	if lerr != nil {
		fail(exitcode.Failure, lerr.Error())
	}
	if warn != nil {
		log.Warn(warn.Error() + "; orphaned processes will not be reaped by the init: run it as PID 1 or on a kernel with PR_SET_CHILD_SUBREAPER")
	}
	if reexecErr != nil {
		log.Warn(reexecErr.Error())
	}
	switch {
	case args.Doctor:
		os.Exit(doctor(ctx, args.DoctorArgs))
	case args.Help:
		fmt.Println(help)
		os.Exit(exitcode.OK)
	case args.Version:
		fmt.Println("imagectl-init version " + version())
		os.Exit(exitcode.OK)
	}
	cfg, err := runtime.LoadConfig(os.Getenv)
	if err != nil {
		fail(exitcode.Usage, err.Error())
	}
	wait := runtime.WaitOptions{GracePeriod: cfg.GracePeriod.Std(), ProcessGroup: args.ProcessGroup, WarnReap: args.WarnReap}
	if args.GracePeriodSet {
		wait.GracePeriod = args.GracePeriod
	}

	pctx, stop := proc.Context(ctx)
	prep, err := runtime.Prepare(pctx, cfg, os.Environ())
	if sig, ok := stop(); ok {
		fail(128+int(sig), fmt.Sprintf("received %s before the command started; not starting it", runtime.SignalName(sig)))
	}
	if err != nil {
		fail(exitcode.Code(err), err.Error())
	}
	alone := len(args.Command) == 0
	if alone && len(prep.Services) == 0 && len(prep.Refused) == 0 {
		fail(exitcode.Usage, runtime.ErrNoCommand.Error()+"\n"+usage)
	}
	for _, err := range prep.Refused {
		if alone {
			// The services are the container's whole job: refuse it.
			fail(exitcode.Failure, err.Error())
		}
		log.Error(err.Error() + "; the command starts without jupyter")
	}
	if s := prep.Summary(); s != "" && !cfg.Quiet {
		log.Info(s)
	}
	var svcs *runtime.Services
	if len(prep.Services) > 0 {
		svcs = proc.StartServices(ctx, prep.Services, stderr)
	}
	// The fingerprint is there before the command starts: probes read it.
	if _, path, err := prep.WriteFingerprint(ctx, svcs.States()...); err != nil {
		log.Warn(err.Error())
	} else if path != "" {
		log.Debug("fingerprint written", "path", path)
	}
	pid := 0
	if !alone {
		var code int
		pid, code, err = proc.StartAs(ctx, args.Command, prep.Env, prep.User)
		if err != nil {
			if svcs != nil {
				svcs.RequestStop()
				proc.Supervise(ctx, 0, svcs, wait)
			}
			fail(code, err.Error())
		}
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
	os.Exit(args.ExitCode(proc.Supervise(ctx, pid, svcs, wait)))
}

// stderr is where the init's own messages go: a closed log pipe must not
// raise a SIGPIPE that would be forwarded to the command.
var stderr = runtime.LogWriter(2)

func fail(code int, msg string) {
	fmt.Fprintln(stderr, "imagectl-init:", msg)
	os.Exit(code)
}
