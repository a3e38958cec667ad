import sys
from ensemble.registry import register
register("default-nomodel", "default", feasibility=None)
from scripts.bench_search import main
sys.exit(main(sys.argv[1:]))
