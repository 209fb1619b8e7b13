//! tare serve: a small, fast built-in HTTP/1.1 server.
