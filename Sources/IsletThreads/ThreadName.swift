internal import CLinux

/// Names the calling thread as the system shows it (`top -H`, `perf`, gdb), cut to
/// the 15 bytes Linux keeps. Called first thing on each thread of Islet's own.
///
/// Not `Thread.current.name = …`: Foundation passes that name to the system only
/// once it has recorded the thread's id, which the starting thread does after the
/// new one may already run, so now and then the name never arrived and the thread
/// kept the name of the thread that started it.
public func nameCurrentThread(_ name: String) {
    var cut = ""
    for scalar in name.unicodeScalars {
        guard cut.utf8.count + String(scalar).utf8.count <= 15 else { break }
        cut.unicodeScalars.append(scalar)
    }
    _ = islet_name_current_thread(cut)
}
