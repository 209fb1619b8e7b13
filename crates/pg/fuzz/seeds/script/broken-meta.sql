\gset
\if true
\sleep 1 hours
