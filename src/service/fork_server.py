# ordlab's fork server for a Python worker under `ordlab explore` (src/roles/fork_server.rs).
# Started once per exploration as `python3 -c <this> <script>`, it imports what <script>
# imports at its top level, then forks one child per run: the child runs <script> as
# `python3 <script> <args>` would, from the modules already imported (an interpreter's start
# and `import redis` cost 0.3 s of CPU here; a fork, milliseconds).
#
# Protocol, one JSON object per line. In (stdin): {"argv": [script, args...], "env": {...},
# "cwd": dir, "stdout": fifo, "stderr": fifo}. Out (stdout): {"pid": n} once the child runs
# (its output goes to the two FIFOs, which the server opens before it forks), {"error": text}
# if it could not start, and {"exit": pid, "status": raw wait status} when a child ends.
import ast, ctypes, json, os, random, runpy, signal, sys, traceback

PR_SET_PDEATHSIG = 1
libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent():
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


die_with_parent()
if os.getppid() == 1:
    sys.exit(1)

script = sys.argv[1]
with open(script, "rb") as f:
    tree = ast.parse(f.read(), script)
# Only what is installed (the standard library, site-packages) is imported here: the script's
# own modules (its directory, the working directory) may do things at import, such as connect,
# and here nothing tells them where (no ORDLAB_* variable yet): the child imports those itself.
sys.path = [p for p in sys.path if p not in ("", os.getcwd(), os.path.dirname(os.path.abspath(script)))]
for node in tree.body:
    names = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        names = [node.module]
    for name in names:
        try:
            __import__(name)
        except BaseException:
            pass  # the child's own import says what is wrong, in its own output

out = sys.stdout


def say(obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()


def reap(_signum, _frame):
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        say({"exit": pid, "status": status})


def child(req, fds):
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        os.setsid()
        die_with_parent()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in (null, *fds):
            os.close(fd)
        sys.stdin = open(0, "r", closefd=False)
    except BaseException:
        os._exit(127)  # never back into the server's loop
    try:
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        random.seed()  # as a fresh interpreter would be
        sys.argv = list(req["argv"])
        sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit:
        raise
    except BaseException as e:
        # As an uncaught exception ends `python3 script`: its traceback from the script's
        # frames on (not the server's), status 1.
        script_path, tb = os.path.abspath(sys.argv[0]), e.__traceback__
        while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != script_path:
            tb = tb.tb_next
        traceback.print_exception(type(e), e, tb or e.__traceback__)
        sys.exit(1)
    # The script's end is the process's: SystemExit unwinds the server's frames, and the
    # interpreter ends as `python3 script` does (atexit handlers, objects finalized).
    sys.exit(0)


signal.signal(signal.SIGCHLD, reap)
say({"ready": True})
for line in sys.stdin:
    req = json.loads(line)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    try:
        fds = [os.open(req["stdout"], os.O_WRONLY), os.open(req["stderr"], os.O_WRONLY)]
        pid = os.fork()
        if pid == 0:
            child(req, fds)  # never returns: it raises SystemExit
        for fd in fds:
            os.close(fd)
        say({"pid": pid})
    except Exception as e:
        say({"error": str(e)})
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
