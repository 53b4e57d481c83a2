"""The environment of evalpipe's own helper processes: built from an allow-list, never the run's whole
environment.

Used for the EvalScope worker and the recording proxy's recorder process.  The worker runs EvalScope, its
scorers and (for LiveCodeBench) the spawned helpers around the sandboxed test programs; the recorder parses
and writes what the proxy hands it; none of that needs a credential.  The server's API key stays in the evalpipe process: the
recording proxy, the only client that talks to the server during the evaluation, adds it to each forwarded
request (``recording.proxy``), and EvalScope sends the placeholder ``EMPTY`` to the proxy.  So a key,
token, proxy or cloud variable the host exports is neither readable from ``/proc/<worker>/environ`` nor
handed to anything the worker starts.

Passed through when set (values unchanged):

* what the interpreter and its libraries need to behave as on the host: ``PATH``, ``HOME``, ``USER``,
  ``LOGNAME``, ``TMPDIR``, ``SHELL``, ``TERM``, the locale and hash-seed names the sandbox
  passes too (``PASSED_THROUGH``), ``VIRTUAL_ENV``, ``PYTHONHASHSEED``;
* where data and caches live: ``NLTK_DATA`` (IFEval's ``punkt_tab``), ``XDG_CACHE_HOME``, ``HF_HOME``,
  ``HF_HUB_CACHE``, ``MODELSCOPE_CACHE``, thread-count settings of BLAS/OpenMP;
* ``EVALPIPE_*`` settings (e.g. ``EVALPIPE_BENCHMARK_MODULES``, the benchmark plug-ins the worker must
  register too) — unless the name looks like a secret (``looks_secret``).

Then the worker's own settings are laid over them (offline hubs, its private datasets cache, no colours).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

#: Host variables passed through unchanged when set, to the sandbox's programs too (locale, hash seed: they
#: change a program's output).
PASSED_THROUGH = ("LANG", "LC_ALL", "LC_CTYPE", "PYTHONHASHSEED", "TZ")
#: Names no caller may add: credentials, tokens, proxies, cloud and SSH agents.
_SECRET_NAME = re.compile(
    r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION)|(^|_)PROXY$|^(AWS|GOOGLE|GCP|AZURE|"
    r"HF_TOKEN|HUGGING|OPENAI|ANTHROPIC|SSH_|GPG_|KUBE|DOCKER|VAULT|NETRC)",
    re.IGNORECASE,
)


def looks_secret(name: str) -> bool:
    """True when ``name`` looks like a credential, token, proxy or agent setting."""
    return bool(_SECRET_NAME.search(name))


#: Host variables the worker sees unchanged when they are set.
WORKER_PASSED_THROUGH = (
    *PASSED_THROUGH,
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "TMPDIR",
    "SHELL",
    "TERM",
    "VIRTUAL_ENV",
    "NLTK_DATA",
    "XDG_CACHE_HOME",
    "HF_HOME",
    "HF_HUB_CACHE",
    "MODELSCOPE_CACHE",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
)
#: Prefix of evalpipe's own settings (passed through unless the name looks like a secret).
EVALPIPE_PREFIX = "EVALPIPE_"


def worker_environment(own: Mapping[str, str], host: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a helper process: the allow-listed host names, then ``own``."""
    host = os.environ if host is None else host
    env = {name: host[name] for name in WORKER_PASSED_THROUGH if name in host}
    env.update(
        {
            name: value
            for name, value in host.items()
            if name.startswith(EVALPIPE_PREFIX) and not looks_secret(name)
        }
    )
    env.update(own)
    return env
