"""Child processes that lead their own process group (``group``): model servers, routers, the EvalScope
worker, variant processes, speed clients and sandboxed test programs are started and stopped the same way;
the loopback ports they listen on are found free (``ports``) before they start."""
