import json,math,collections,sys
rows=[json.loads(l) for l in open(sys.argv[1] if len(sys.argv)>1 else 'profiles.jsonl')]
for hz in (499,199):
    R=[r for r in rows if r['hz']==hz]
    cells=collections.defaultdict(list); poisson=collections.defaultdict(list)
    for r in R:
        tot=collections.Counter()
        for comp,subs in r['profile_us'].items():
            if comp not in ('server','generator'): continue
            for s,v in subs.items(): tot[(comp,s)]+=v
        for k,v in tot.items():
            cells[k].append(v)
            n=v*r['requests']*hz/1e6  # samples
            poisson[k].append(math.sqrt(max(n,1))/hz/r['requests']*1e6)
    print(f"== {hz} Hz, {len(R)} trials, requests median {sorted(r['requests'] for r in R)[len(R)//2]}")
    top=sorted(cells, key=lambda k:-sum(cells[k])/len(R))[:10]
    for k in top:
        v=cells[k]+[0]*(len(R)-len(cells[k]))
        m=sum(v)/len(v); sd=math.sqrt(sum((x-m)**2 for x in v)/(len(v)-1))
        ps=sum(poisson[k])/len(poisson[k])
        print(f"{k[0]:>9} {k[1]:<16} mean {m:6.2f} us/req  trial sd {sd:5.2f}  sampling sd {ps:5.2f}  (share of var {min(1,ps**2/sd**2)*100:3.0f}%)")
