import FuzzSupport

// A libFuzzer target: the model-level decoders (see FuzzCheck).
@_cdecl("FuzzModelDecoders_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    FuzzDriver.run(argc, argv, check: .decode)
}
