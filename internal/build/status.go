package build

import (
	"sync"

	"github.com/moby/buildkit/client"
)

func closeStatus(o *options) {
	if o != nil && o.status != nil {
		close(o.status)
	}
}

// forwardStatus gives every target's solve a status channel of its own
// (BuildKit's client closes it when the solve returns) and forwards what
// it reports to WithStatus's channel, each vertex named with its platform
// ("[linux/arm64] ...") when there are several: the platforms' steps run
// at once and are otherwise named alike. wait returns once every solve's
// channel is closed and drained: call it after the solves, each of which
// must be given its channel. Without WithStatus the channels are nil.
func forwardStatus(o *options, targets []buildTarget) (chans []chan *client.SolveStatus, wait func()) {
	chans = make([]chan *client.SolveStatus, len(targets))
	if o.status == nil {
		return chans, func() {}
	}
	var fwd sync.WaitGroup
	for i, t := range targets {
		ch := make(chan *client.SolveStatus)
		chans[i] = ch
		prefix := ""
		if len(targets) > 1 {
			prefix = "[" + platformString(t.platform) + "] "
		}
		fwd.Go(func() {
			for s := range ch {
				if prefix != "" {
					for _, v := range s.Vertexes {
						v.Name = prefix + v.Name
					}
				}
				o.status <- s
			}
		})
	}
	return chans, fwd.Wait
}
