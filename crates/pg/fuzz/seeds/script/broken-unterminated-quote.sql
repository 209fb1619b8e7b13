select 1;
select 'oops;
