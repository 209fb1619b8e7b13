-- every \set function and operator
\set a abs(-3) + double(2) * int(2.5) / 2 % 3
\set b exp(1) + ln(2) - sqrt(4) + pow(2, 10) + power(2, 0.5) + pi()
\set c greatest(1, :a, 3.5) + least(4, 5) + mod(-7, 3)
\set d random(1, 10) + random_exponential(1, 100, 2.5) + random_gaussian(1, 100, 2.5)
\set e (1 << 4) >> 2 & 7 | 8 # 1 + ~0
\set f :a = 1 and not (:b <> 2 or :c >= 3)
\set g -9223372036854775807 - 1
\set h 1.5e3 + .5 + true + false
select :a::int, :b, :c, :"d", ':e' /* :f ; */ from t where x = (1;2); -- :g
\sleep :h us
\sleep 10 ms
select 1
