import FuzzSupport

// A libFuzzer target: graphs built from the input, written every way and read back (see
// FuzzGraphRecipe).
@_cdecl("FuzzWriteGraphs_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    FuzzDriver.run(argc, argv, check: .writeGraphs)
}
