/// Islet's own version.
public enum IsletVersion {
    /// The release this build is, as semantic version text.
    public static let current = "0.1.0"
}
