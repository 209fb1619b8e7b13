//! tare http: the HTTP/1.1 load engine.
