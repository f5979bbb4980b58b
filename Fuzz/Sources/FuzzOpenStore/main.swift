import FuzzSupport

// A libFuzzer target: each input as the journal of a store, opened (see FuzzStore).
@_cdecl("FuzzOpenStore_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    FuzzDriver.run(argc, argv, check: .openStore)
}
