struct A: ActivityAttributes {
  struct ContentState: Codable, Hashable { var s: String = #"a"b"#; var t = """
  x\(y)
  """ }
  var `default`: [String: [Int?]]
  /* nested /* comment */ */
  var x: Int = 0x1F_u
}
