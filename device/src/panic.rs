//! The text of a caught panic, for every layer that catches one (a
//! circuit's synthesize is the caller's code; a worker must not take its
//! engine down with it) and reports it as an error.

/// The panic's message where it carried a string, else "panic".
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".into())
}
