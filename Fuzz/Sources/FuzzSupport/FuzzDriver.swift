import Foundation

// libFuzzer's driver, entered from a target's `main`.
//
// Why not libFuzzer's own `main`: SwiftPM links an executable target with its `main` renamed
// to `<Target>_main` (so tests can link it), and with `-parse-as-library` there is none; each
// target defines that symbol and hands over to `LLVMFuzzerRunDriver`, libFuzzer's public entry.

@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ test: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

public enum FuzzDriver {
    /// What a target checks for each input.
    public enum Check: Sendable {
        /// ``FuzzCheck/load(_:)``: the file loaders.
        case load
        /// ``FuzzCheck/decode(_:)``: the model-level decoders.
        case decode
        /// ``FuzzGraphRecipe/check(_:)``: the writers, on graphs the input describes.
        case writeGraphs
        /// ``FuzzStore/check(_:)``: a store opened on the input as its journal.
        case openStore
    }

    /// Set once by `run`, before libFuzzer calls `testOneInput` from its one thread.
    nonisolated(unsafe) fileprivate static var check = Check.load

    /// Runs libFuzzer with the process's arguments, checking each input with `check`.
    public static func run(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>, check: Check) -> CInt {
        self.check = check
        var count = argc
        var arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
        return LLVMFuzzerRunDriver(&count, &arguments, fuzzOne)
    }
}

/// libFuzzer's entry point for one input (also the symbol its runtime links against).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    switch FuzzDriver.check {
    case .load: FuzzCheck.load(data)
    case .decode: FuzzCheck.decode(data)
    case .writeGraphs: FuzzGraphRecipe.check(data)
    case .openStore: FuzzStore.check(data)
    }
    return 0
}
