#!/bin/bash
source .venv/bin/activate
cd .
for rep in 1 2; do
  if [ $((rep % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
  for t in $order; do
    if [ $t = base ]; then tree=$BEFORE; else tree=.; fi
    echo "== fixed rep $rep $t $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    PYTHONPATH=$tree/src flock /tmp/rankwise-cpu.lock python bench/fixed_cost.py --reps 30 --procs 3 --top 12 > /tmp/perf-results/fixed_${t}_${rep}.txt 2>&1
    echo "rc $? $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  done
done
for rep in 1 2 3; do
  if [ $((rep % 2)) -eq 0 ]; then order="base new"; else order="new base"; fi
  for t in $order; do
    if [ $t = base ]; then tree=$BEFORE; else tree=.; fi
    echo "== peers rep $rep $t $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    PYTHONPATH=$tree/src flock /tmp/rankwise-cpu.lock python bench/peers_first_call.py --users 100k --ks 10 --reps 1 \
      --libraries rectools --data-dir /tmp/perf-data --json /tmp/perf-results/final_${t}_${rep}.json > /tmp/perf-results/final_${t}_${rep}.txt 2>&1
    echo "rc $?"
  done
done
echo done $(date +%T)
