package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// SSHHost is the host alias that ServeSSH's URLs name. It resolves only
// through the ssh configuration ServeSSH writes, as a user's ~/.ssh/config
// alias does, so a URL that works proves that git's ssh honoured it.
const SSHHost = "lossless-test"

// ServeSSH serves the bare repository bareDir over ssh with a private
// sshd on 127.0.0.1 and returns its URL, ssh://lossless-test/<absolute
// path of bareDir> (the scp-like form "lossless-test:<path>" works as
// well), and the environment git needs to reach it: GIT_SSH_COMMAND
// running ssh with a configuration file in which the Host alias names the
// address, port, user (the current one), key and known host, as a user's
// ~/.ssh/config would. Host key checking is strict against a known_hosts
// file written up front, so a connection that reached anything but this
// sshd would fail. sshd, ssh and ssh-keygen are needed (NeedTool: skipped
// locally, failed under CI=true without them); sshd is stopped, with the
// sessions it started, when the test ends.
//
// The remote git runs through the current user's login shell, with PATH
// holding git, a temporary HOME and GIT_CONFIG_NOSYSTEM=1 set through the
// authorized key, so it is as hermetic as Git's. When run as root, sshd
// needs its privilege separation directory (/run/sshd on Debian), which
// ServeSSH creates if missing, and permits root to log in by key only.
func ServeSSH(t testing.TB, bareDir string) (url string, env []string) {
	t.Helper()
	sshd := NeedTool(t, "sshd")
	keygen := NeedTool(t, "ssh-keygen")
	ssh := NeedTool(t, "ssh")
	git := NeedTool(t, "git")
	root, name := splitRepo(t, bareDir)
	repo := filepath.Join(root, name)
	me, err := user.Current()
	if err != nil {
		t.Fatalf("ServeSSH: the current user, whom ssh logs in as: %v", err)
	}

	dir := sshDir(t)
	hostKey := filepath.Join(dir, "host_ed25519")
	clientKey := filepath.Join(dir, "client_ed25519")
	for _, k := range []string{hostKey, clientKey} {
		run(t, keygen, "-q", "-t", "ed25519", "-N", "", "-C", "testkit", "-f", k)
	}

	// The authorized key sets the remote git's environment: sshd gives a
	// session a fixed PATH (which may lack git) and the user's real HOME.
	home := newHome(t)
	execPath := Git(t, "", nil, "--exec-path")
	sessionEnv := []string{
		"PATH=" + strings.Join([]string{execPath, filepath.Dir(git), os.Getenv("PATH")}, string(os.PathListSeparator)),
		"HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
	}
	opts := []string{"restrict"}
	for _, kv := range sessionEnv {
		opts = append(opts, "environment=\""+strings.ReplaceAll(kv, `"`, `\"`)+"\"")
	}
	authorized := filepath.Join(dir, "authorized_keys")
	writeFile(t, authorized, strings.Join(opts, ",")+" "+readFile(t, clientKey+".pub"))

	rootLogin := "no"
	if os.Geteuid() == 0 {
		rootLogin = "prohibit-password"
	}
	config := filepath.Join(dir, "sshd_config")
	writeConfig := func(port int) {
		writeFile(t, config, fmt.Sprintf(`# Written by testkit.ServeSSH for one test.
ListenAddress 127.0.0.1
Port %d
HostKey %s
PidFile %s
AuthorizedKeysFile %s
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin %s
PermitUserEnvironment PATH,HOME,GIT_CONFIG_NOSYSTEM
AcceptEnv GIT_PROTOCOL
StrictModes no
UsePAM no
UseDNS no
PrintMotd no
PermitTTY no
X11Forwarding no
AllowTcpForwarding no
AllowAgentForwarding no
AllowStreamLocalForwarding no
MaxStartups 100
LoginGraceTime 60
LogLevel VERBOSE
`, port, sshQuote(t, hostKey), sshQuote(t, filepath.Join(dir, "sshd.pid")),
			sshQuote(t, authorized), rootLogin))
	}
	writeConfig(22)
	checkSSHDConfig(t, sshd, config)

	port := startServer(t, "sshd", func(port int) (*exec.Cmd, string) {
		writeConfig(port)
		// An absolute path: sshd re-executes itself for each connection.
		return exec.Command(sshd, "-D", "-e", "-f", config),
			fmt.Sprintf("Server listening on 127.0.0.1 port %d.", port)
	})

	hostPub := strings.Fields(readFile(t, hostKey+".pub"))
	knownHosts := filepath.Join(dir, "known_hosts")
	writeFile(t, knownHosts, fmt.Sprintf("[127.0.0.1]:%d %s %s\n", port, hostPub[0], hostPub[1]))
	clientConfig := filepath.Join(dir, "ssh_config")
	writeFile(t, clientConfig, fmt.Sprintf(`# Written by testkit.ServeSSH: what a user's ~/.ssh/config says.
Host %s
	HostName 127.0.0.1
	Port %d
	User %s
	IdentityFile %s
	IdentitiesOnly yes
	IdentityAgent none
	UserKnownHostsFile %s
	GlobalKnownHostsFile /dev/null
	StrictHostKeyChecking yes
	UpdateHostKeys no
	BatchMode yes
	PasswordAuthentication no
	KbdInteractiveAuthentication no
	ControlMaster no
	ControlPath none
	ConnectTimeout 30
	LogLevel ERROR
`, SSHHost, port, sshQuote(t, me.Username), sshQuote(t, clientKey), sshQuote(t, knownHosts)))

	env = []string{"GIT_SSH_COMMAND=" + shellQuote(ssh) + " -F " + shellQuote(clientConfig)}
	return "ssh://" + SSHHost + filepath.ToSlash(repo), env
}

// privsepMissing matches sshd's complaint that its privilege separation
// directory, whose path is compiled in, does not exist.
var privsepMissing = regexp.MustCompile(`Missing privilege separation directory: (\S+)`)

// checkSSHDConfig has sshd test config (sshd -t), which reports a bad
// configuration, a missing key or a missing privilege separation
// directory before any port is taken. Run as root, it creates that
// directory, as the sshd service does at boot, which a container without
// the service lacks.
func checkSSHDConfig(t testing.TB, sshd, config string) {
	t.Helper()
	out, err := exec.Command(sshd, "-t", "-f", config).CombinedOutput()
	if m := privsepMissing.FindSubmatch(out); err != nil && m != nil && os.Geteuid() == 0 {
		if mkErr := os.MkdirAll(string(m[1]), 0o755); mkErr != nil {
			t.Fatalf("creating sshd's privilege separation directory: %v", mkErr)
		}
		out, err = exec.Command(sshd, "-t", "-f", config).CombinedOutput()
	}
	if err != nil {
		t.Fatalf("%s -t -f %s: %v\n%s", sshd, config, err, out)
	}
}

// sshDir returns a directory for the keys and configuration files of
// ServeSSH: the test's temporary directory unless its path holds a
// character that ssh's configuration files would read differently ('%'
// starts a token there; '"' and '\' quote), which a test name can bring.
func sshDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if !strings.ContainsAny(dir, "%\"\\\n") {
		return dir
	}
	dir, err := os.MkdirTemp("", "testkit-ssh-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// sshQuote quotes s as one argument of an ssh or sshd configuration
// file, failing the test for the characters that cannot be quoted there.
func sshQuote(t testing.TB, s string) string {
	t.Helper()
	if strings.ContainsAny(s, "\"\\\n") {
		t.Fatalf("%q cannot be written into an ssh configuration file", s)
	}
	return `"` + s + `"`
}

// run runs a program that must succeed, failing the test with its output.
func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// readFile returns the content of a file the test wrote.
func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeFile writes a file for the test, readable by its owner only (ssh
// refuses keys and configuration that others may write).
func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
