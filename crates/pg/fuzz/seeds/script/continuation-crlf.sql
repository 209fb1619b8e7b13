\set x 1 + \
 2
select :x;
