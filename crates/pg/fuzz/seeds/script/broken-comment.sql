/* never closed
select 1;
