package dev.pgtask.internal.wakeup;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.internal.wakeup.WakePayload.Cancel;
import dev.pgtask.internal.wakeup.WakePayload.DueLater;
import dev.pgtask.internal.wakeup.WakePayload.DueNow;
import dev.pgtask.internal.wakeup.WakePayload.SchedulesChanged;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The payload codec, without a database: what each notification says, and what is ignored. */
class WakePayloadTest {

  private static WakePayload.Message wake(String payload) {
    return WakePayload.decode(WakePayload.CHANNEL, payload);
  }

  private static WakePayload.Message control(String payload) {
    return WakePayload.decode(WakePayload.CONTROL_CHANNEL, payload);
  }

  @Test
  void aQueueNameAloneSaysATaskOfThatQueueIsDueNow() {
    assertThat(wake("mail")).isEqualTo(new DueNow("mail"));
  }

  @Test
  void aQueueNameAndMillisecondsSayWhenATaskOfThatQueueIsDue() {
    assertThat(wake("mail 1500")).isEqualTo(new DueLater("mail", Duration.ofMillis(1500)));
  }

  @Test
  void aNegativeDelayMeansDueNow() {
    assertThat(wake("mail -20")).isEqualTo(new DueLater("mail", Duration.ZERO));
  }

  @Test
  void aDelayOfUpToADayIsKeptAndALongerOneIsLeftToThePoll() {
    assertThat(wake("mail 86400000")).isEqualTo(new DueLater("mail", Duration.ofDays(1)));
    assertThat(wake("mail 86400001")).isNull();
  }

  @Test
  void aWakeUpWhoseDelayIsNotANumberIsIgnored() {
    assertThat(wake("mail soon")).isNull();
    assertThat(wake("mail 1 2")).isNull();
    assertThat(wake("mail ")).isNull();
    assertThat(wake("mail 99999999999999999999")).isNull();
  }

  @Test
  void everyPayloadPgtaskEncodesDecodesToWhatItSays() {
    assertThat(wake(WakePayload.dueNow("q1"))).isEqualTo(new DueNow("q1"));
    assertThat(wake(WakePayload.dueIn("q1", 250))).isEqualTo(new DueLater("q1", Duration.ofMillis(250)));
    assertThat(control(WakePayload.cancel(42, 3))).isEqualTo(new Cancel(42));
    assertThat(control(WakePayload.schedulesChanged())).isEqualTo(new SchedulesChanged());
  }

  @Test
  void aCancelHintCarriesTheTaskIdWithOrWithoutItsAttempt() {
    assertThat(control("cancel 42")).isEqualTo(new Cancel(42));
    assertThat(control("cancel 42 7")).isEqualTo(new Cancel(42));
  }

  @Test
  void controlPayloadsThatAreNotPgtasksAreIgnored() {
    assertThat(control("cancel")).isNull();
    assertThat(control("cancel x")).isNull();
    assertThat(control("cancel 1 2 3")).isNull();
    assertThat(control("stop 1")).isNull();
    assertThat(control("cancel 1 " + "9".repeat(60))).isNull();
    assertThat(control("schedules now")).isNull();
    assertThat(control(null)).isNull();
  }

  @Test
  void notificationsOnOtherChannelsAreIgnoredWhateverTheyCarry() {
    assertThat(WakePayload.decode("pgtask_probe_1", "mail")).isNull();
    assertThat(WakePayload.decode("other", "cancel 1")).isNull();
    assertThat(WakePayload.decode(WakePayload.CHANNEL, null)).isNull();
  }

  @Test
  void aQueueNameOnTheControlChannelIsNoCommand() {
    assertThat(control("mail")).isNull();
  }
}
