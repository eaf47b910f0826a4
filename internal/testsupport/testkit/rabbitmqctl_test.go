package testkit

import (
	"strings"
	"testing"
)

func TestRabbitmqctlCommandIsTheEnvironmentsCommandLine(t *testing.T) {
	t.Setenv("STREAMGEN_RABBITMQCTL", "  chroot /r  rabbitmqctl -n node@host ")
	got := strings.Join(RabbitmqctlCommand(), "|")
	if want := "chroot|/r|rabbitmqctl|-n|node@host"; got != want {
		t.Fatalf("RabbitmqctlCommand() = %q, want %q", got, want)
	}
	t.Setenv("STREAMGEN_RABBITMQCTL", "")
	if got := strings.Join(RabbitmqctlCommand(), "|"); got != "rabbitmqctl" {
		t.Fatalf("without STREAMGEN_RABBITMQCTL: %q, want rabbitmqctl", got)
	}
}

func TestRabbitmqctlRunsTheConfiguredCommand(t *testing.T) {
	t.Setenv("STREAMGEN_RABBITMQCTL", "echo ctl")
	if got := Rabbitmqctl(t, "list_queues", "name"); got != "ctl list_queues name\n" {
		t.Fatalf("Rabbitmqctl ran %q", got)
	}
}

func TestRabbitmqctlFailsTheTestWhenTheCommandFails(t *testing.T) {
	t.Setenv("STREAMGEN_RABBITMQCTL", "false")
	r := &recordingTB{TB: t}
	r.inTest(func() { Rabbitmqctl(r, "status") })
	if msg := r.end(); !strings.Contains(msg, "false status") {
		t.Fatalf("failure message %q does not name the command", msg)
	}
}
