//! Targets (nginx, postgres, tare-serve) and placements (native, docker-*, lab-*): starting, checking and stopping the server under test.
