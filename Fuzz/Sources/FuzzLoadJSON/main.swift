import FuzzSupport

// A libFuzzer target: `ModelContext.load(_:)` on JSON seeds (see FuzzCheck).
@_cdecl("FuzzLoadJSON_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    FuzzDriver.run(argc, argv, check: .load)
}
