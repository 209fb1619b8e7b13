import re,collections,sys
ents=[]
for l in open('crates/monitor/src/profile/subsystems.txt'):
    l=l.strip()
    if not l or l.startswith('#'): continue
    c=[x.strip() for x in l.split('|')]
    p=c[0]; pre=p.endswith('*'); p=p.rstrip('*')
    ents.append((p,pre,c[1],c[2]=='leaf'))
def entry(n):
    best=None
    for e in ents:
        if (n.startswith(e[0]) if e[1] else n==e[0]):
            k=(len(e[0]), not e[1])
            if best is None or k>best[0]: best=(k,e)
    return best and best[1]
samples=[];cur=None
for line in open(sys.argv[1]):
    if not line.strip():
        if cur is not None: samples.append(cur); cur=None
        continue
    if not line.startswith('\t'):
        cur=[];continue
    f=line.split()
    if f[0].startswith('ffffffff') and cur is not None: cur.append(f[1] if len(f)>1 else '')
depth=collections.Counter(); match=collections.Counter(); sub=collections.Counter()
for s in samples:
    if not s: continue
    depth[len(s)]+=1
    m=None
    for i,n in enumerate(s):
        e=entry(n)
        if e:
            m=(i, 'OTHER' if (e[3] and i>0) else e[2]); break
    match[m[0] if m else -1]+=1
    sub[m[1] if m else 'OTHER']+=1
tot=sum(depth.values())
print('kernel samples',tot)
acc=0
print('depth cdf:', [(d,round(sum(v for k,v in depth.items() if k<=d)/tot,3)) for d in (8,12,16,20,24,32,40,48,64)])
print('max depth',max(depth))
print('match index cdf:', [(d,round(sum(v for k,v in match.items() if 0<=k<=d)/tot,4)) for d in (0,2,4,8,12,16,20,24,32,48,64)], 'nomatch', match[-1]/tot)
print(sub.most_common(20))
