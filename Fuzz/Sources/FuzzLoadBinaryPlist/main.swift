import FuzzSupport

// A libFuzzer target: `ModelContext.load(_:)` on binary property-list seeds (see FuzzCheck).
@_cdecl("FuzzLoadBinaryPlist_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    FuzzDriver.run(argc, argv, check: .load)
}
