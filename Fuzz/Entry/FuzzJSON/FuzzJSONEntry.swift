import FuzzTargets

#if FUZZING
import CLibFuzzer

/// libFuzzer's entry point: one input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    JSONFuzz.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// The executable's entry point (SwiftPM names it after the module): libFuzzer's
/// driver, on one input at a time.
@_cdecl("FuzzJSON_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, fuzzTestOneInput)
}
#else
/// Without the fuzzer: replays the files (or folders of files) named on the command line.
@main
struct FuzzJSONReplay {
    static func main() {
        FuzzReplay.main(name: "FuzzJSON", JSONFuzz.run)
    }
}
#endif
