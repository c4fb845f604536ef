import json, sys, collections, statistics
d=json.load(open(sys.argv[1]))
ev=[e for e in d['traceEvents'] if e.get('ph') in ('X','i')]
ghz=float(sys.argv[2]) if len(sys.argv)>2 else 1.755
for tid in sorted({e['tid'] for e in ev}):
    evs=sorted([e for e in ev if e['tid']==tid], key=lambda e:e['ts'])
    its=[e for e in evs if e['name'].startswith('iteration loop') and not e['name'].endswith('end')]
    loop=collections.Counter(e['name'] for e in its).most_common(1)[0][0]
    its=[e for e in its if e['name']==loop]
    rel=collections.defaultdict(list)
    lens=[]
    for a,b in zip(its,its[1:]):
        t0,t1=a['ts'],b['ts']; lens.append((t1-t0)*1e3*ghz)
        seen=collections.Counter()
        for e in evs:
            if t0<=e['ts']<t1 and not e['name'].startswith('iteration'):
                k=(e['name'],seen[e['name']]); seen[e['name']]+=1
                rel[k].append(((e['ts']-t0)*1e3*ghz, e.get('dur',0)*1e3*ghz))
    print(f'track {tid} {loop}: {len(lens)} iterations, median {statistics.median(lens):.0f} cycles')
    rows=sorted(rel.items(), key=lambda kv: statistics.median(x[0] for x in kv[1]))
    for (name,n),xs in rows:
        if len(xs)<len(lens)//2: continue
        print(f'   {name:18s}#{n} start {statistics.median(x[0] for x in xs):6.0f} dur {statistics.median(x[1] for x in xs):6.0f}')
