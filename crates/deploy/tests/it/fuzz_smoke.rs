//! Runs the guest-console, Podman-output, service-command, image-config and
//! Docker-reply fuzz targets (crates/deploy/fuzz) for a bounded time, so every test run
//! also fuzzes them (docs/fuzzing.md).

#[test]
fn guest_console_reading_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), "vm_console", "seeds", 4);
}

#[test]
fn podman_output_reading_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run(
        env!("CARGO_MANIFEST_DIR"),
        "podman_output",
        "seeds_podman",
        3,
    );
}

#[test]
fn service_command_reading_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run(
        env!("CARGO_MANIFEST_DIR"),
        "service_command",
        "seeds_service",
        3,
    );
}

#[test]
fn image_config_reading_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), "image_config", "seeds_image", 3);
}

#[test]
fn docker_reply_reading_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run(
        env!("CARGO_MANIFEST_DIR"),
        "docker_reply",
        "seeds_docker",
        3,
    );
}
