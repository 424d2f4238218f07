#!/usr/bin/env python3
"""Streams resources from a kube-apiserver and prints one line per change.

    python watch.py [--server URL] [--until-synced] [--checkpoint FILE] RESOURCE...

Without --server the cluster is found as kubectl finds it ($KUBECONFIG,
~/.kube/config, in-cluster). SIGINT and SIGTERM end it cleanly: stop, drain,
write the checkpoint (with --checkpoint), close; the next run resumes from it.
"""

import argparse
import logging
import os
import signal
import sys

import kube_tattler
from kube_tattler import Change


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("resources", nargs="+", metavar="RESOURCE", help="pods, nodes, apps/v1/deployments, ...")
    p.add_argument("--server", help="the apiserver's URL")
    p.add_argument("--until-synced", action="store_true", help="stop once every resource is synced")
    p.add_argument("--checkpoint", metavar="FILE", help="resume from FILE and write it on exit")
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(threadName)s %(levelname)s %(name)s: %(message)s")

    config = {"resources": args.resources}
    if args.server:
        config["server"] = args.server
    checkpoint = None
    if args.checkpoint and os.path.exists(args.checkpoint):
        with open(args.checkpoint, "rb") as f:
            checkpoint = f.read()
    try:
        r = kube_tattler.open(config, checkpoint=checkpoint)
    except kube_tattler.InvalidCheckpoint as e:
        print("watch: %s; starting from a full sync" % e, file=sys.stderr)
        r = kube_tattler.open(config)
    except kube_tattler.Error as e:
        print("watch: %s" % e, file=sys.stderr)
        return 2

    # Python runs signal handlers on the main thread between two waits of the
    # loop below (it waits in slices for that): stop() is safe there.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: r.stop())
    pending = {s["resource"] for s in r.stats()}
    with r:
        for e in r:
            if e.change == Change.SYNCED:
                print("Synced %s at %s" % (e.resource, e.resource_version_str), flush=True)
            elif e.change == Change.ERROR:
                print("Error %s: %s" % (e.resource, e.error), flush=True)
            else:
                flag = " (inferred)" if e.inferred else ""
                print("%s %s/%s rv=%s%s" % (e.change, e.namespace, e.name, e.resource_version_str, flag), flush=True)
            if e.change == Change.SYNCED or (e.change == Change.ERROR and e.error.ended):
                pending.discard(str(e.resource))
                if args.until_synced and not pending:
                    r.stop()
        if args.checkpoint:
            with open(args.checkpoint + ".tmp", "wb") as f:
                f.write(r.checkpoint())
            os.replace(args.checkpoint + ".tmp", args.checkpoint)
    return 0


if __name__ == "__main__":
    sys.exit(main())
