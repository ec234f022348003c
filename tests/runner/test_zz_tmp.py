import subprocess, sys, time, resource
def test_tmp(toy):
    subprocess.run([sys.executable, "-m", "workbench.cli.main", "hypothesis", "run", "toy-fix", "--db", toy.db+"0", "--json", "--replicates", "1"], capture_output=True, text=True)
    for flag in (["-m", "cProfile", "-o", "/tmp/run.prof"], []):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN); t0 = time.time()
        p = subprocess.run([sys.executable, *flag, "-m", "workbench.cli.main", "hypothesis", "run", "toy-fix", "--db", toy.db, "--json", "--replicates", "1"], capture_output=True, text=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        print("RC", p.returncode, "wall", time.time()-t0, "cpu", r1.ru_utime+r1.ru_stime-r0.ru_utime-r0.ru_stime, file=sys.stderr)
